package identity

import (
	"context"
	"crypto/sha256"
	"net/http"
	"slices"
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

// credential is what Authenticate leaves for Recheck and CheckedAt. On a
// route that defers its bearer token (DeferBearer), it also holds the
// token's hash and the roles the route admits until the handler's
// statement or RequestPrincipal resolves the principal into p.
type credential struct {
	check func(context.Context) (Principal, error)
	mu    sync.Mutex
	at    time.Time

	sha256 []byte     // the deferred token's hash; nil otherwise
	admit  [][]Role   // each RequireRole's roles: a role must be in every one
	p      *Principal // the deferred token's principal, once resolved
	err    error      // or why it does not authenticate, once resolved
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

// FromContext returns the principal of the request, if it was
// authenticated: a deferred bearer token (DeferBearer) not yet resolved
// has none.
func FromContext(ctx context.Context) (Principal, bool) {
	if p, ok := ctx.Value(ctxKey{}).(Principal); ok {
		return p, true
	}
	if c, ok := ctx.Value(recheckKey{}).(*credential); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.p != nil {
			return *c.p, true
		}
	}
	return Principal{}, false
}

// RequestPrincipal returns the request's principal, resolving a deferred
// bearer token (DeferBearer) with the lookup Authenticate would have made.
// Routes behind Authenticate always have one, so its absence is a wiring
// bug; it is reported as a 401 rather than a panic so that one miswired
// route cannot take the process down.
func RequestPrincipal(c echo.Context) (Principal, error) {
	ctx := c.Request().Context()
	if p, ok := FromContext(ctx); ok {
		return p, nil
	}
	if d := deferred(ctx); d != nil {
		return d.resolve(ctx)
	}
	return Principal{}, problem.Unauthenticated("authentication is required")
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
	if d := deferred(ctx); d != nil {
		_, err := d.resolve(ctx)
		return err
	}
	c, ok := ctx.Value(recheckKey{}).(*credential)
	p, okp := FromContext(ctx)
	if !ok || !okp {
		return problem.Unauthenticated("authentication is required")
	}
	now, err := c.check(ctx)
	if err != nil {
		return err
	}
	if now != p {
		return problem.Unauthenticated("the user's account changed: authenticate again")
	}
	c.mu.Lock()
	c.at = time.Now()
	c.mu.Unlock()
	return nil
}

// DeferBearer reports the requests whose bearer token Authenticate leaves
// to the handler (nil: none). The handler authenticates it in the first
// statement it makes anyway (Caller), which saves a round trip to the
// database on a hot route without caching anything: the token is still
// checked against the database within that request, and revoking it
// takes effect on the next one. A handler of such a route must go through
// Caller; RequestPrincipal resolves the token for any other code.
type DeferBearer func(c echo.Context) bool

// BearerScheme authenticates bearer tokens of another issuer than the API
// tokens': those that start with Prefix (OAuth access tokens on /mcp).
// Check returns the principal the token acts for, or a 401 that says the
// same whatever was wrong; it runs again for every Recheck.
type BearerScheme struct {
	Prefix string
	Check  func(ctx context.Context, token string) (Principal, error)
}

// Authenticate is the middleware for /v1: a Bearer token, or (when sessions
// is non-nil and no Authorization header is sent) the inbox session cookie.
// A route that takes tokens of other issuers names their schemes; any
// other route refuses them as it refuses any unknown token.
func Authenticate(db store.Executor, sessions SessionLookup, deferBearer DeferBearer, schemes ...BearerScheme) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			authz := c.Request().Header.Get(echo.HeaderAuthorization)
			r := c.Request()
			checkedAt := time.Now()
			var (
				p     Principal
				err   error
				check func(context.Context) (Principal, error)
			)
			switch {
			case authz != "":
				scheme, token, ok := strings.Cut(authz, " ")
				token = strings.TrimSpace(token)
				if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
					err = problem.Unauthenticated("the Authorization header must be 'Bearer <token>'")
					break
				}
				check = func(ctx context.Context) (Principal, error) { return principalOf(TokenAuthenticate(ctx, db, token)) }
				if s, ok := schemeOf(schemes, token); ok {
					check = func(ctx context.Context) (Principal, error) { return s.Check(ctx, token) }
				} else if deferBearer != nil && deferBearer(c) {
					if !wellFormed(token) {
						return tokenRefused()
					}
					sum := sha256.Sum256([]byte(token))
					cred := &credential{check: check, sha256: sum[:]}
					c.SetRequest(r.WithContext(context.WithValue(r.Context(), recheckKey{}, cred)))
					return next(c)
				}
				p, err = check(r.Context())
			case sessions != nil:
				check = func(ctx context.Context) (Principal, error) { return principalOf(sessions(ctx, r, false)) }
				p, err = principalOf(sessions(r.Context(), r, !opensStream(r)))
			default:
				err = problem.Unauthenticated("authentication is required: send 'Authorization: Bearer <token>'")
			}
			if err != nil {
				return err
			}
			ctx := context.WithValue(WithPrincipal(r.Context(), p), recheckKey{}, &credential{check: check, at: checkedAt})
			c.SetRequest(r.WithContext(ctx))
			return next(c)
		}
	}
}

// RequireRole refuses (403) principals whose role is not among roles. A
// deferred bearer token (DeferBearer) is checked when it is resolved.
func RequireRole(roles ...Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			if _, ok := FromContext(ctx); !ok {
				if cred := deferred(ctx); cred != nil {
					cred.mu.Lock()
					cred.admit = append(cred.admit, roles)
					cred.mu.Unlock()
					return next(c)
				}
			}
			p, err := RequestPrincipal(c)
			if err != nil {
				return err
			}
			if !slices.Contains(roles, p.Role) {
				return roleRefused()
			}
			return next(c)
		}
	}
}

func roleRefused() error { return problem.Forbidden("your role may not do this") }

// deferred returns the request's deferred bearer credential, if it has
// one and it is not resolved yet.
func deferred(ctx context.Context) *credential {
	c, ok := ctx.Value(recheckKey{}).(*credential)
	if !ok || c.sha256 == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil {
		return nil
	}
	return c
}

// admits reports whether role passes every RequireRole of the route; c.mu
// is held.
func (c *credential) admits(role Role) bool {
	for _, roles := range c.admit {
		if !slices.Contains(roles, role) {
			return false
		}
	}
	return true
}

// resolve looks the deferred token up as Authenticate would have, then
// applies the route's RequireRole. A refusal is kept for the rest of the
// request, which every later refusal of the handler then repeats without
// another lookup.
func (c *credential) resolve(ctx context.Context) (Principal, error) {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return Principal{}, err
	}
	at := time.Now()
	p, err := c.check(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && !c.admits(p.Role) {
		err = roleRefused()
	}
	if err != nil {
		c.err = err
		return Principal{}, err
	}
	c.p, c.at = &p, at
	return p, nil
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

// principalOf is u's principal, for a lookup that returns a user.
func principalOf(u *User, err error) (Principal, error) {
	if err != nil {
		return Principal{}, err
	}
	return u.Principal(), nil
}

// schemeOf returns the scheme whose prefix token has.
func schemeOf(schemes []BearerScheme, token string) (BearerScheme, bool) {
	for _, s := range schemes {
		if strings.HasPrefix(token, s.Prefix) {
			return s, true
		}
	}
	return BearerScheme{}, false
}

// opensStream reports whether r asks for an event stream (EventSource
// sends Accept: text/event-stream). Opening or reopening one is not the
// user's activity, so it does not extend a session's idle window.
func opensStream(r *http.Request) bool {
	return strings.TrimSpace(r.Header.Get(echo.HeaderAccept)) == "text/event-stream"
}
