// Package web is the back-office inbox: server-rendered pages where staff
// sign in with a password, see pending approval requests, decide them and
// read invoices. Templates and static files are embedded, so the binary
// needs nothing beside it; the little JavaScript there is (live updates)
// is an external file allowed by a strict CSP, and every action is a plain
// form that works without it.
//
// Sessions live in Postgres (id stored as SHA-256, idle and absolute
// expiry); every state-changing form carries the session's CSRF token; the
// sign-in form carries a double-submit token from a pre-session cookie.
package web

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/labstack/echo/v4"
)

// Config holds the inbox settings.
type Config struct {
	// SecureCookies forces the Secure attribute on cookies even when the
	// request does not look like TLS (set it behind a TLS-terminating proxy
	// that does not send X-Forwarded-Proto).
	SecureCookies bool
	// SessionIdle ends a session that has not been used for this long.
	SessionIdle time.Duration
	// SessionAbsolute ends a session this long after sign-in, used or not.
	SessionAbsolute time.Duration
	// LoginPerUser and LoginPerIP bound sign-in attempts.
	LoginPerUser, LoginPerIP ThrottleLimit
}

// DefaultConfig returns the defaults: sessions idle out after 2 h (a long
// meeting) and end after 12 h (a working day); 5 sign-in attempts per
// username and 50 per IP address (an office behind one NAT) per 15 minutes.
func DefaultConfig() Config {
	return Config{
		SessionIdle:     2 * time.Hour,
		SessionAbsolute: 12 * time.Hour,
		LoginPerUser:    ThrottleLimit{Attempts: 5, Window: 15 * time.Minute},
		LoginPerIP:      ThrottleLimit{Attempts: 50, Window: 15 * time.Minute},
	}
}

// Cookie names. The session cookie is HttpOnly and SameSite=Lax; the
// sign-in CSRF cookie is SameSite=Strict and lives only on /login.
const (
	SessionCookie    = "invoiced_session"
	loginCSRFCookie  = "invoiced_login_csrf"
	csrfField        = "csrf_token"
	csrfHeader       = "X-CSRF-Token"
	sessionCtxKey    = "web.session"
	maxReasonLength  = 2000
	maxUsernameBytes = 63
)

// Handler serves the inbox pages.
type Handler struct {
	db   store.Executor
	cfg  Config
	log  *slog.Logger
	tmpl *templates
	deps Deps
}

// New returns the inbox handler over db.
func New(db store.Executor, cfg Config, log *slog.Logger, deps Deps) (*Handler, error) {
	t, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	return &Handler{db: db, cfg: cfg, log: log, tmpl: t, deps: deps}, nil
}

// Home answers GET /: the page where the signed-in user's work is
// (landing), or the sign-in form, which leads there.
func (h *Handler) Home(c echo.Context) error {
	s, err := h.sessionFromRequest(c)
	switch {
	case problem.HasCode(err, problem.CodeUnauthenticated):
		return c.Redirect(http.StatusSeeOther, "/login")
	case err != nil:
		return h.errorPage(c, nil, err)
	}
	return c.Redirect(http.StatusSeeOther, landing(s.User.Role))
}

// SecurityHeaders is the middleware every page route carries (the inbox
// routes are unversioned, DESIGN.md §6, and answer HTML, never
// problem+json): a CSP that allows only this origin's scripts and styles
// (no inline script at all), no framing, no referrer beyond this origin,
// no MIME sniffing, no caching of pages that show business data.
func (h *Handler) SecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		hd := c.Response().Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Cache-Control", "no-store")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		return next(c)
	}
}

func (h *Handler) secure(c echo.Context) bool {
	return h.cfg.SecureCookies || c.Scheme() == "https"
}

// sessionFromRequest returns the live session named by the cookie.
func (h *Handler) sessionFromRequest(c echo.Context) (*Session, error) {
	return h.session(c.Request().Context(), c.Request(), true)
}

// session returns the live session named by r's cookie; touch extends its
// idle window.
func (h *Handler) session(ctx context.Context, r *http.Request, touch bool) (*Session, error) {
	ck, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil, errNoSession
	}
	return sessionGet(ctx, h.db, ck.Value, h.cfg.SessionIdle, touch)
}

// SessionLookup lets /v1 accept the inbox cookie instead of a Bearer
// token, so the inbox's script can read the approvals event stream. A
// cookie-authenticated request that changes state must also send the
// session's CSRF token in X-CSRF-Token: the cookie alone would let another
// site's form act for the user.
func (h *Handler) SessionLookup(ctx context.Context, r *http.Request, touch bool) (*identity.User, error) {
	s, err := h.session(ctx, r, touch)
	if err != nil {
		return nil, err
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !tokenEqual(r.Header.Get(csrfHeader), s.CSRFToken) {
			return nil, problem.Forbidden("a cookie-authenticated request that changes state must send the X-CSRF-Token header")
		}
	}
	return s.User, nil
}

func tokenEqual(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// LiveRefreshHeader marks the inbox script's own re-read of a page after a
// live event. That is not the user's activity, so it does not extend the
// session's idle window: an unattended inbox tab signs out after the idle
// limit like any other.
const LiveRefreshHeader = "X-Invoiced-Live-Refresh"

// PageFunc is a page handler that runs with a live session; Page makes it
// an echo.HandlerFunc.
type PageFunc func(c echo.Context, s *Session) error

// Page wraps fn: no live session sends the browser to sign in (and back
// here afterwards); a state-changing request without the session's CSRF
// token is refused with 403 before fn runs; an error fn returns becomes an
// HTML error page with the problem's status.
func (h *Handler) Page(fn PageFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		s, err := h.session(r.Context(), r, r.Header.Get(LiveRefreshHeader) == "")
		if err != nil {
			if problem.HasCode(err, problem.CodeUnauthenticated) {
				h.clearCookie(c, SessionCookie, "/")
				return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(nextTarget(c)))
			}
			return h.errorPage(c, nil, err)
		}
		if c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead {
			if !tokenEqual(c.FormValue(csrfField), s.CSRFToken) {
				return h.errorPage(c, s, problem.Forbidden("the form has expired or did not come from this site; reload the page and try again"))
			}
		}
		if err := fn(c, s); err != nil {
			return h.errorPage(c, s, err)
		}
		return nil
	}
}

// nextTarget is where to return after sign-in: this page for a GET (and
// its HEAD), the inbox otherwise (a POST cannot be replayed after a
// redirect).
func nextTarget(c echo.Context) string {
	if m := c.Request().Method; m == http.MethodGet || m == http.MethodHead {
		return c.Request().URL.RequestURI()
	}
	return "/inbox"
}

// safeNext keeps redirects after sign-in on this site: a path, not a
// scheme-relative or absolute URL. Browsers drop tabs and newlines from a
// Location and read a backslash as a slash (WHATWG URL parsing), so
// "/<TAB>/evil.example" or "/\evil.example" would leave the site: any
// control character or backslash is refused, not only a leading "//".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') ||
		strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "/inbox"
	}
	return next
}

func (h *Handler) setCookie(c echo.Context, name, value, path string, sameSite http.SameSite) {
	c.SetCookie(&http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: h.secure(c), SameSite: sameSite})
}

func (h *Handler) clearCookie(c echo.Context, name, path string) {
	c.SetCookie(&http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1, HttpOnly: true, Secure: h.secure(c), SameSite: http.SameSiteLaxMode})
}

// errorPage renders err as HTML with its problem status; 5xx causes are
// logged, never shown.
func (h *Handler) errorPage(c echo.Context, s *Session, err error) error {
	p := server.ToProblem(err)
	if p.Status >= 500 {
		h.log.Error("page failed", "request_id", c.Response().Header().Get(echo.HeaderXRequestID),
			"method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Response().Committed {
		return nil
	}
	server.SetRetryAfter(c, p)
	d := h.data(c, s, p.Title)
	d.Problem = p
	return h.render(c, p.Status, "error", d)
}
