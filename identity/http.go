package identity

import (
	"context"
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/labstack/echo/v4"
)

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal of the request, if it was authenticated.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// MustPrincipal returns the request's principal; routes behind Authenticate
// always have one, so its absence is a wiring bug reported as a 401.
func MustPrincipal(c echo.Context) (Principal, error) {
	p, ok := FromContext(c.Request().Context())
	if !ok {
		return Principal{}, problem.Unauthenticated("authentication is required")
	}
	return p, nil
}

// SessionLookup resolves a browser session cookie to a user; the web inbox
// provides it. It returns (nil, nil) never: no session is an error.
type SessionLookup func(c echo.Context) (*User, error)

// Authenticate is the middleware for /v1: a Bearer token, or (when sessions
// is non-nil and no Authorization header is sent) the inbox session cookie.
func Authenticate(db store.Executor, sessions SessionLookup) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			authz := c.Request().Header.Get(echo.HeaderAuthorization)
			var (
				u   *User
				err error
			)
			switch {
			case authz != "":
				scheme, token, ok := strings.Cut(authz, " ")
				if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
					err = problem.Unauthenticated("the Authorization header must be 'Bearer <token>'")
				} else {
					u, err = TokenAuthenticate(c.Request().Context(), db, strings.TrimSpace(token))
				}
			case sessions != nil:
				u, err = sessions(c)
			default:
				err = problem.Unauthenticated("authentication is required: send 'Authorization: Bearer <token>'")
			}
			if err != nil {
				return err
			}
			ctx := WithPrincipal(c.Request().Context(), u.Principal())
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

// RequireRole refuses (403) principals whose role is not among roles.
func RequireRole(roles ...Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, err := MustPrincipal(c)
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
	p, err := MustPrincipal(c)
	if err != nil {
		return err
	}
	u, err := UserGetByID(c.Request().Context(), h.DB, p.UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}
