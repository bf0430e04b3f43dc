package main

import (
	"github.com/invoiced/invoiced/identity"
	"github.com/labstack/echo/v4"
)

// routes is the one route table of the service.
func (a *app) routes(e *echo.Echo) {
	v1 := e.Group("/v1", identity.Authenticate(a.pool, nil))

	me := &identity.Handler{DB: a.pool}
	v1.GET("/me", me.Me)
}
