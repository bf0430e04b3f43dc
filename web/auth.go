package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

type loginView struct {
	Username string
	Next     string
}

// LoginForm is the page GET /login: the sign-in form; a browser already
// signed in goes on to where it was heading.
func (h *Handler) LoginForm(c echo.Context) error {
	if s, err := h.sessionFromRequest(c); err == nil {
		return c.Redirect(http.StatusSeeOther, returnTo(c.QueryParam("next"), s.User.Role))
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

// loginData prepares the sign-in form with its CSRF token (formCSRF).
func (h *Handler) loginData(c echo.Context, username string) (*pageData, error) {
	d, err := h.formCSRF(c, "Sign in")
	if err != nil {
		return nil, err
	}
	d.Data = loginView{Username: username, Next: nextParam(c.QueryParam("next"))}
	return d, nil
}

// formCSRF prepares a form of the pages under /login, where no session
// is yet, with a double-submit CSRF token: the same random value in a
// SameSite=Strict cookie and in a hidden field, so a form posted from
// another site (login CSRF) fails.
func (h *Handler) formCSRF(c echo.Context, title string) (*pageData, error) {
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
	d := h.data(c, nil, title)
	d.CSRF = token
	return d, nil
}

// csrfPosted says whether a form posted under /login carries the token
// of its cookie.
func csrfPosted(c echo.Context) bool {
	ck, err := c.Cookie(loginCSRFCookie)
	return err == nil && tokenEqual(c.FormValue(csrfField), ck.Value)
}

// nextParam is a sign-in form's return path as sent when it is a path on
// this site (safeNext), else empty: the user lands where their role's
// work is (landing).
func nextParam(next string) string {
	if safeNext(next) != next {
		return ""
	}
	return next
}

// returnTo is where a sign-in goes: the page it was asked to return to,
// else where role's work is.
func returnTo(next string, role identity.Role) string {
	if next = nextParam(next); next != "" {
		return next
	}
	return landing(role)
}

// landing is where a role's work is: a clerk's is the chat, an
// approver's and an admin's the inbox of approval requests.
func landing(role identity.Role) string {
	if role == identity.RoleClerk {
		return "/chat"
	}
	return "/inbox"
}

// loginAttempt is the sign-in form as posted.
type loginAttempt struct {
	Username, Password, Next, CSRF string
}

// parseLogin reads the sign-in form: the username trimmed and lower-cased
// as usernames are stored, the return path kept on this site (empty
// when none was asked for).
func parseLogin(c echo.Context) loginAttempt {
	return loginAttempt{
		Username: strings.ToLower(strings.TrimSpace(c.FormValue("username"))),
		Password: c.FormValue("password"),
		Next:     nextParam(c.FormValue("next")),
		CSRF:     c.FormValue(csrfField),
	}
}

// Login is the form POST /login: it checks the credentials and starts a
// session. Attempts are counted per IP address and per username before
// the password is checked.
func (h *Handler) Login(c echo.Context) error {
	f := parseLogin(c)
	if !csrfPosted(c) {
		return h.errorPage(c, nil, problem.Forbidden("the sign-in form has expired or did not come from this site; reload it and try again"))
	}
	if f.Username == "" || f.Password == "" || len(f.Username) > maxUsernameBytes {
		return h.loginAgain(c, f, http.StatusUnprocessableEntity, "Enter your username and password.")
	}
	id, u, err := h.signIn(c.Request().Context(), c.RealIP(), f.Username, f.Password)
	if err != nil {
		return h.loginRefused(c, f, err)
	}
	return h.signedIn(c, id, returnTo(f.Next, u.Role))
}

// signedIn gives the browser the cookie of session id and sends it to
// next.
func (h *Handler) signedIn(c echo.Context, id, next string) error {
	h.setCookie(c, SessionCookie, id, "/", http.SameSiteLaxMode)
	h.clearCookie(c, loginCSRFCookie, "/login")
	return c.Redirect(http.StatusSeeOther, next)
}

// signIn counts the attempt against remoteIP and username, checks the
// password, and starts a session; it returns the session id for the
// cookie and the user. A successful sign-in clears the username's count
// and sweeps ended sessions.
func (h *Handler) signIn(ctx context.Context, remoteIP, username, password string) (string, *identity.User, error) {
	for _, hit := range []struct {
		key string
		lim ThrottleLimit
	}{{"ip:" + remoteIP, h.cfg.LoginPerIP}, {"user:" + username, h.cfg.LoginPerUser}} {
		if err := throttleHit(ctx, h.db, hit.key, hit.lim); err != nil {
			if problem.HasCode(err, CodeRateLimited) {
				h.log.Warn("sign-in rate limited", "key_kind", strings.SplitN(hit.key, ":", 2)[0], "remote_ip", remoteIP)
			}
			return "", nil, err
		}
	}
	u, err := identity.CredentialsCheck(ctx, h.db, username, password)
	if err != nil {
		return "", nil, err
	}
	if err := throttleReset(ctx, h.db, "user:"+username); err != nil {
		return "", nil, err
	}
	if _, err := SessionSweep(ctx, h.db, h.cfg.SessionIdle); err != nil {
		return "", nil, err
	}
	id, _, err := SessionCreate(ctx, h.db, u.ID, h.cfg.SessionAbsolute)
	return id, u, err
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

// linkView is the page a sign-in link opens.
type linkView struct {
	Token       string
	Username    string
	DisplayName string
	MinLength   int
}

// SignInLinkForm is the page GET /login/link?token=…, which a one-time
// sign-in link opens: the form to choose a password. Opening it uses
// nothing, so a mail scanner or a chat's link preview that fetches it
// leaves the link to its user; choosing the password uses it.
func (h *Handler) SignInLinkForm(c echo.Context) error {
	token := c.QueryParam("token")
	u, err := signInLinkUser(c.Request().Context(), h.db, token)
	if err != nil {
		return h.errorPage(c, nil, err)
	}
	return h.linkForm(c, http.StatusOK, token, u, "")
}

// linkForm shows the set-password form of the link token, for u, with
// status and msg.
func (h *Handler) linkForm(c echo.Context, status int, token string, u *identity.User, msg string) error {
	d, err := h.formCSRF(c, "Choose a password")
	if err != nil {
		return h.errorPage(c, nil, err)
	}
	d.Error = msg
	d.Data = linkView{Token: token, Username: u.Username, DisplayName: u.DisplayName, MinLength: identity.PasswordMinLength}
	return h.render(c, status, "set-password", d)
}

// SignInLink is the form POST /login/link: it uses the link, sets the
// password chosen and signs the browser in, in one transaction, and
// sends it where its role's work is. Two posts of one link at once make
// one session; the other finds the link used. A password refused (too
// short, or not typed the same twice) shows the form again, the link
// unused.
func (h *Handler) SignInLink(c echo.Context) error {
	if !csrfPosted(c) {
		return h.errorPage(c, nil, problem.Forbidden("the form has expired or did not come from this site; open the sign-in link again"))
	}
	ctx := c.Request().Context()
	token, password := c.FormValue("token"), c.FormValue("password")
	u, err := signInLinkUser(ctx, h.db, token)
	if err != nil {
		return h.errorPage(c, nil, err)
	}
	if password != c.FormValue("password_again") {
		return h.linkForm(c, http.StatusUnprocessableEntity, token, u, "The two passwords differ; type the same one twice.")
	}
	if err := identity.PasswordValidate(password); err != nil {
		pe, _ := problem.As(err)
		return h.linkForm(c, http.StatusUnprocessableEntity, token, u, passwordRefusal(pe))
	}
	var id string
	err = store.WithTx(ctx, h.db, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if u, err = signInLinkUseTx(ctx, tx, token); err != nil {
			return err
		}
		// Ends any session the user had, as every password change does.
		if err := identity.PasswordSet(ctx, tx, u.Username, password); err != nil {
			return err
		}
		id, _, err = SessionCreate(ctx, tx, u.ID, h.cfg.SessionAbsolute)
		return err
	})
	if err != nil {
		return h.errorPage(c, nil, err)
	}
	return h.signedIn(c, id, landing(u.Role))
}

// passwordRefusal is identity.PasswordValidate's refusal as a sentence
// for the form.
func passwordRefusal(p *problem.Error) string {
	if p == nil || len(p.Errors) == 0 {
		return "Choose another password."
	}
	return "The password " + p.Errors[0].Message + "."
}
