package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

type loginView struct {
	Username string
	Next     string
}

// loginForm shows the sign-in form; a browser already signed in goes on
// to where it was heading.
func (h *Handler) loginForm(c echo.Context) error {
	if _, err := h.sessionFromRequest(c); err == nil {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	d, err := h.loginData(c, "")
	if err != nil {
		return h.errorPage(c, nil, err)
	}
	if c.QueryParam("signed_out") != "" {
		d.Notice = "You have signed out."
	}
	return h.render(c, http.StatusOK, "login", d)
}

// loginData prepares the form with a double-submit CSRF token: the same
// random value in a SameSite=Strict cookie and in a hidden field, so a
// form posted from another site (login CSRF) fails.
func (h *Handler) loginData(c echo.Context, username string) (*pageData, error) {
	token := ""
	if ck, err := c.Cookie(loginCSRFCookie); err == nil && len(ck.Value) >= 40 && len(ck.Value) <= 64 {
		token = ck.Value
	} else {
		t, err := randomToken()
		if err != nil {
			return nil, err
		}
		token = t
		h.setCookie(c, loginCSRFCookie, token, "/login", http.SameSiteStrictMode)
	}
	d := h.data(c, nil, "Sign in")
	d.CSRF = token
	d.Data = loginView{Username: username, Next: safeNext(c.QueryParam("next"))}
	return d, nil
}

// login checks the credentials and starts a session. Attempts are counted
// per IP address and per username before the password is checked.
func (h *Handler) login(c echo.Context) error {
	ctx := c.Request().Context()
	username := strings.ToLower(strings.TrimSpace(c.FormValue("username")))
	password := c.FormValue("password")
	next := safeNext(c.FormValue("next"))

	ck, err := c.Cookie(loginCSRFCookie)
	if err != nil || !tokenEqual(c.FormValue(csrfField), ck.Value) {
		return h.errorPage(c, nil, problem.Forbidden("the sign-in form has expired or did not come from this site; reload it and try again"))
	}
	fail := func(status int, msg string) error {
		d, err := h.loginData(c, username)
		if err != nil {
			return h.errorPage(c, nil, err)
		}
		d.Data = loginView{Username: username, Next: next}
		d.Error = msg
		return h.render(c, status, "login", d)
	}
	if username == "" || password == "" || len(username) > maxUsernameBytes {
		return fail(http.StatusUnprocessableEntity, "Enter your username and password.")
	}
	for _, hit := range []struct {
		key string
		lim ThrottleLimit
	}{{"ip:" + c.RealIP(), h.cfg.LoginPerIP}, {"user:" + username, h.cfg.LoginPerUser}} {
		if err := throttleHit(ctx, h.db, hit.key, hit.lim); err != nil {
			if pe, ok := problem.As(err); ok && pe.Code == CodeRateLimited {
				if ra, ok := pe.Extra["retry_after"].(string); ok {
					c.Response().Header().Set("Retry-After", ra)
				}
				h.log.Warn("sign-in rate limited", "key_kind", strings.SplitN(hit.key, ":", 2)[0], "remote_ip", c.RealIP())
				return fail(http.StatusTooManyRequests, "Too many sign-in attempts. "+strings.ToUpper(pe.Detail[:1])+pe.Detail[1:]+".")
			}
			return h.errorPage(c, nil, err)
		}
	}
	u, err := credentialsCheck(ctx, h.db, username, password)
	if err != nil {
		if problem.HasCode(err, problem.CodeUnauthenticated) {
			return fail(http.StatusUnauthorized, "The username or password is wrong.")
		}
		return h.errorPage(c, nil, err)
	}
	if err := throttleReset(ctx, h.db, "user:"+username); err != nil {
		return h.errorPage(c, nil, err)
	}
	if _, err := SessionSweep(ctx, h.db, h.cfg.SessionIdle); err != nil {
		return h.errorPage(c, nil, err)
	}
	id, _, err := SessionCreate(ctx, h.db, u.ID, h.cfg.SessionAbsolute)
	if err != nil {
		return h.errorPage(c, nil, err)
	}
	h.setCookie(c, SessionCookie, id, "/", http.SameSiteLaxMode)
	h.clearCookie(c, loginCSRFCookie, "/login")
	return c.Redirect(http.StatusSeeOther, next)
}

// logout ends the session server-side, so the cookie is useless even if a
// copy of it survives in the browser.
func (h *Handler) logout(c echo.Context, _ *Session) error {
	ck, err := c.Cookie(SessionCookie)
	if err != nil {
		return errors.Join(errNoSession, err)
	}
	if err := SessionDelete(c.Request().Context(), h.db, ck.Value); err != nil {
		return err
	}
	h.clearCookie(c, SessionCookie, "/")
	return c.Redirect(http.StatusSeeOther, "/login?signed_out=1")
}
