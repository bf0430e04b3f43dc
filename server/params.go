package server

import (
	"github.com/google/uuid"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

// PathID returns the {id} path parameter of a route naming a what. An id
// that is not a UUID in its canonical form cannot exist, so it is a 404
// like any other unknown id.
func PathID(c echo.Context, what string) (uuid.UUID, error) {
	raw := c.Param("id")
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != len(uuid.Nil.String()) {
		return uuid.Nil, problem.NotFound(what)
	}
	return id, nil
}

// PageQuery reads ?cursor=&limit= of a list.
func PageQuery(c echo.Context) (page.Request, error) {
	var (
		r   page.Request
		err error
	)
	if v := c.QueryParam("cursor"); v != "" {
		if r.After, err = page.ParseCursor(v); err != nil {
			return r, err
		}
	}
	r.Limit, err = page.ParseLimit(c.QueryParam("limit"))
	return r, err
}
