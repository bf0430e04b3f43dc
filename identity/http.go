package identity

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/labstack/echo/v4"
)

type ctxKey struct{}

// recheckKey carries the request's credential check; see Recheck.
type recheckKey struct{}

// credential is what Authenticate leaves for Recheck and CheckedAt.
type credential struct {
	check func(context.Context) (*User, error)
	mu    sync.Mutex
	at    time.Time
}

// CheckedAt is when the request's credential was checked: by
// Authenticate, or by the last Recheck that passed. Zero without one.
func CheckedAt(ctx context.Context) time.Time {
	if c, ok := ctx.Value(recheckKey{}).(*credential); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.at
	}
	return time.Time{}
}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal of the request, if it was authenticated.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// RequestPrincipal returns the request's principal. Routes behind
// Authenticate always have one, so its absence is a wiring bug; it is
// reported as a 401 rather than a panic so that one miswired route cannot
// take the process down.
func RequestPrincipal(c echo.Context) (Principal, error) {
	p, ok := FromContext(c.Request().Context())
	if !ok {
		return Principal{}, problem.Unauthenticated("authentication is required")
	}
	return p, nil
}

// SessionLookup resolves a browser session cookie to a user; the web inbox
// provides it. It returns (nil, nil) never: no session is an error. touch
// extends the session's idle window; Recheck passes false, because an open
// stream is not the user's activity.
type SessionLookup func(ctx context.Context, r *http.Request, touch bool) (*User, error)

// Recheck reports whether the credential that authenticated the request
// still authenticates the same principal: the token not revoked, the
// session not ended or idle past its limit, the user not disabled, the
// role unchanged. Authentication otherwise happens once per request, so a
// response that stays open (the approvals event stream) calls it while it
// runs. Any difference is 401: the client authenticates again.
func Recheck(ctx context.Context) error {
	c, ok := ctx.Value(recheckKey{}).(*credential)
	p, okp := FromContext(ctx)
	if !ok || !okp {
		return problem.Unauthenticated("authentication is required")
	}
	u, err := c.check(ctx)
	if err != nil {
		return err
	}
	if u.Principal() != p {
		return problem.Unauthenticated("the user's account changed: authenticate again")
	}
	c.mu.Lock()
	c.at = time.Now()
	c.mu.Unlock()
	return nil
}

// Authenticate is the middleware for /v1: a Bearer token, or (when sessions
// is non-nil and no Authorization header is sent) the inbox session cookie.
func Authenticate(db store.Executor, sessions SessionLookup) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			authz := c.Request().Header.Get(echo.HeaderAuthorization)
			r := c.Request()
			checkedAt := time.Now()
			var (
				u     *User
				err   error
				check func(context.Context) (*User, error)
			)
			switch {
			case authz != "":
				scheme, token, ok := strings.Cut(authz, " ")
				token = strings.TrimSpace(token)
				if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
					err = problem.Unauthenticated("the Authorization header must be 'Bearer <token>'")
					break
				}
				check = func(ctx context.Context) (*User, error) { return TokenAuthenticate(ctx, db, token) }
				u, err = TokenAuthenticate(r.Context(), db, token)
			case sessions != nil:
				check = func(ctx context.Context) (*User, error) { return sessions(ctx, r, false) }
				u, err = sessions(r.Context(), r, !opensStream(r))
			default:
				err = problem.Unauthenticated("authentication is required: send 'Authorization: Bearer <token>'")
			}
			if err != nil {
				return err
			}
			ctx := context.WithValue(WithPrincipal(r.Context(), u.Principal()), recheckKey{}, &credential{check: check, at: checkedAt})
			c.SetRequest(r.WithContext(ctx))
			return next(c)
		}
	}
}

// RequireRole refuses (403) principals whose role is not among roles.
func RequireRole(roles ...Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, err := RequestPrincipal(c)
			if err != nil {
				return err
			}
			for _, r := range roles {
				if p.Role == r {
					return next(c)
				}
			}
			return problem.Forbidden("your role may not do this")
		}
	}
}

// Handler serves identity routes.
type Handler struct {
	DB store.Executor
}

// Me answers GET /v1/me with the principal and their user record.
func (h *Handler) Me(c echo.Context) error {
	p, err := RequestPrincipal(c)
	if err != nil {
		return err
	}
	u, err := UserGetByID(c.Request().Context(), h.DB, p.UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}

// opensStream reports whether r asks for an event stream (EventSource
// sends Accept: text/event-stream). Opening or reopening one is not the
// user's activity, so it does not extend a session's idle window.
func opensStream(r *http.Request) bool {
	return strings.TrimSpace(r.Header.Get(echo.HeaderAccept)) == "text/event-stream"
}
