package app

import (
	"github.com/invoiced/invoiced/identity"
	"github.com/labstack/echo/v4"
)

// Routes mounts every route of the service: the one route table.
func (a *App) Routes(e *echo.Echo) {
	v1 := e.Group("/v1", identity.Authenticate(a.pool, nil))

	me := &identity.Handler{DB: a.pool}
	v1.GET("/me", me.Me)
}
