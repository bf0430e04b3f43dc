package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

type loginView struct {
	Username string
	Next     string
}

// LoginForm is the page GET /login: the sign-in form; a browser already
// signed in goes on to where it was heading.
func (h *Handler) LoginForm(c echo.Context) error {
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

// loginAttempt is the sign-in form as posted.
type loginAttempt struct {
	Username, Password, Next, CSRF string
}

// parseLogin reads the sign-in form: the username trimmed and lower-cased
// as usernames are stored, the return path kept on this site.
func parseLogin(c echo.Context) loginAttempt {
	return loginAttempt{
		Username: strings.ToLower(strings.TrimSpace(c.FormValue("username"))),
		Password: c.FormValue("password"),
		Next:     safeNext(c.FormValue("next")),
		CSRF:     c.FormValue(csrfField),
	}
}

// Login is the form POST /login: it checks the credentials and starts a
// session. Attempts are counted per IP address and per username before
// the password is checked.
func (h *Handler) Login(c echo.Context) error {
	f := parseLogin(c)
	if ck, err := c.Cookie(loginCSRFCookie); err != nil || !tokenEqual(f.CSRF, ck.Value) {
		return h.errorPage(c, nil, problem.Forbidden("the sign-in form has expired or did not come from this site; reload it and try again"))
	}
	if f.Username == "" || f.Password == "" || len(f.Username) > maxUsernameBytes {
		return h.loginAgain(c, f, http.StatusUnprocessableEntity, "Enter your username and password.")
	}
	id, err := h.signIn(c.Request().Context(), c.RealIP(), f.Username, f.Password)
	if err != nil {
		return h.loginRefused(c, f, err)
	}
	h.setCookie(c, SessionCookie, id, "/", http.SameSiteLaxMode)
	h.clearCookie(c, loginCSRFCookie, "/login")
	return c.Redirect(http.StatusSeeOther, f.Next)
}

// signIn counts the attempt against remoteIP and username, checks the
// password, and starts a session; it returns the session id for the
// cookie. A successful sign-in clears the username's count and sweeps
// ended sessions.
func (h *Handler) signIn(ctx context.Context, remoteIP, username, password string) (string, error) {
	for _, hit := range []struct {
		key string
		lim ThrottleLimit
	}{{"ip:" + remoteIP, h.cfg.LoginPerIP}, {"user:" + username, h.cfg.LoginPerUser}} {
		if err := throttleHit(ctx, h.db, hit.key, hit.lim); err != nil {
			if problem.HasCode(err, CodeRateLimited) {
				h.log.Warn("sign-in rate limited", "key_kind", strings.SplitN(hit.key, ":", 2)[0], "remote_ip", remoteIP)
			}
			return "", err
		}
	}
	u, err := identity.CredentialsCheck(ctx, h.db, username, password)
	if err != nil {
		return "", err
	}
	if err := throttleReset(ctx, h.db, "user:"+username); err != nil {
		return "", err
	}
	if _, err := SessionSweep(ctx, h.db, h.cfg.SessionIdle); err != nil {
		return "", err
	}
	id, _, err := SessionCreate(ctx, h.db, u.ID, h.cfg.SessionAbsolute)
	return id, err
}

// loginRefused answers a sign-in signIn refused: the form again for too
// many attempts (with Retry-After) or wrong credentials, an error page for
// anything else.
func (h *Handler) loginRefused(c echo.Context, f loginAttempt, err error) error {
	pe, ok := problem.As(err)
	switch {
	case ok && pe.Code == CodeRateLimited:
		if ra, ok := pe.Extra["retry_after"].(string); ok {
			c.Response().Header().Set("Retry-After", ra)
		}
		return h.loginAgain(c, f, http.StatusTooManyRequests, strings.ToUpper(pe.Detail[:1])+pe.Detail[1:]+".")
	case ok && pe.Code == problem.CodeUnauthenticated:
		return h.loginAgain(c, f, http.StatusUnauthorized, "The username or password is wrong.")
	}
	return h.errorPage(c, nil, err)
}

// loginAgain shows the sign-in form again with status and msg, keeping
// the username and return path as sent.
func (h *Handler) loginAgain(c echo.Context, f loginAttempt, status int, msg string) error {
	d, err := h.loginData(c, f.Username)
	if err != nil {
		return h.errorPage(c, nil, err)
	}
	d.Data = loginView{Username: f.Username, Next: f.Next}
	d.Error = msg
	return h.render(c, status, "login", d)
}

// Logout is the form POST /logout (wrapped in Page): it ends the session
// server-side, so the cookie is useless even if a copy of it survives in
// the browser.
func (h *Handler) Logout(c echo.Context, _ *Session) error {
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
