package schedules

import (
	"encoding/json"
	"net/http"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/capability/caphttp"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves /v1/schedules. Creating and listing run the
// capabilities (the same checks on every path); reading one, its runs
// and deleting it are plain reads and a writer's act.
type Handler struct {
	Caps *caphttp.Handler
	Svc  *Service
}

// Create serves POST /v1/schedules: 201 with the schedule.
func (h *Handler) Create(c echo.Context) error {
	raw, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	in, err := capability.ParseInput(raw)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, CapCreate, in, capability.PathREST)
	if err != nil {
		return err
	}
	if s, ok := out.(*Schedule); ok {
		c.Response().Header().Set(echo.HeaderLocation, "/v1/schedules/"+s.ID.String())
	}
	return caphttp.Respond(c, http.StatusCreated, out)
}

// List serves GET /v1/schedules?limit=&cursor=.
func (h *Handler) List(c echo.Context) error {
	in, err := pageInput(c)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	doc, err := capability.ParseInput(raw)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, CapList, doc, capability.PathREST)
	if err != nil {
		return err
	}
	return caphttp.Respond(c, http.StatusOK, out)
}

func pageInput(c echo.Context) (map[string]any, error) {
	in := map[string]any{}
	if v := c.QueryParam("cursor"); v != "" {
		in["cursor"] = v
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := page.ParseLimit(v)
		if err != nil {
			return nil, err
		}
		in["limit"] = n
	}
	for k := range c.QueryParams() {
		if k != "cursor" && k != "limit" {
			return nil, problem.Invalid(k, "is not a parameter of this list (limit, cursor)")
		}
	}
	return in, nil
}

// Get serves GET /v1/schedules/{id}.
func (h *Handler) Get(c echo.Context) error {
	id, err := server.PathID(c, "schedule")
	if err != nil {
		return err
	}
	s, err := h.Svc.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return caphttp.Respond(c, http.StatusOK, s)
}

// Update serves PATCH /v1/schedules/{id}: 200 with the schedule as
// changed, its version as the ETag; If-Match makes the change conditional.
func (h *Handler) Update(c echo.Context) error {
	id, err := server.PathID(c, "schedule")
	if err != nil {
		return err
	}
	in, err := caphttp.Body(c, "schedule_id", id)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, CapUpdate, in, capability.PathREST)
	if err != nil {
		return err
	}
	return caphttp.Respond(c, http.StatusOK, out)
}

// Delete serves DELETE /v1/schedules/{id}: 200 with the ended schedule.
func (h *Handler) Delete(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	id, err := server.PathID(c, "schedule")
	if err != nil {
		return err
	}
	s, err := h.Svc.Delete(c.Request().Context(), p, capability.PathREST, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

// Runs serves GET /v1/schedules/{id}/runs?limit=&cursor=.
func (h *Handler) Runs(c echo.Context) error {
	id, err := server.PathID(c, "schedule")
	if err != nil {
		return err
	}
	in, err := pageInput(c)
	if err != nil {
		return err
	}
	p := page.Request{Limit: 20}
	if n, ok := in["limit"].(int); ok {
		p.Limit = n
	}
	if v, ok := in["cursor"].(string); ok {
		if p.After, err = page.ParseCursor(v); err != nil {
			return err
		}
	}
	out, err := h.Svc.Runs(c.Request().Context(), id, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
