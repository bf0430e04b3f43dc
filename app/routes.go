package app

import (
	"strings"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/labstack/echo/v4"
)

// Routes mounts every route of the service: the one route table.
func (a *App) Routes(e *echo.Echo) {
	// Authentication is a global middleware limited to /v1 rather than
	// group middleware: Echo answers 404 instead of 405 for a known path
	// with the wrong method when a group has middleware.
	e.Use(onlyUnder("/v1/", identity.Authenticate(a.pool, a.web.SessionLookup)))
	v1 := e.Group("/v1")

	me := &identity.Handler{DB: a.pool}
	v1.GET("/me", me.Me)

	(&approvals.Handler{Svc: a.approvalSvc, Hub: a.approvalHub}).Mount(v1)

	// The back-office inbox: HTML pages outside /v1 (DESIGN.md §6).
	a.web.Mount(e)
}

// onlyUnder applies m to requests whose path starts with prefix.
func onlyUnder(prefix string, m echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		wrapped := m(next)
		return func(c echo.Context) error {
			if strings.HasPrefix(c.Request().URL.Path, prefix) {
				return wrapped(c)
			}
			return next(c)
		}
	}
}
