package allowances

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/capability/caphttp"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves /v1/allowances. Granting and reading run the
// capabilities (the same checks and gate as invoke, chat and MCP);
// revoking is the approvers' and admins', like deciding.
type Handler struct {
	Caps *caphttp.Handler
	Svc  *Service
}

// Grant serves POST /v1/allowances: 201 with the allowance once its grant
// is approved, 403 APPROVAL_REQUIRED before.
func (h *Handler) Grant(c echo.Context) error {
	raw, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	in, err := capability.ParseInput(raw)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, CapGrant, in, capability.PathREST)
	if err != nil {
		return err
	}
	if a, ok := out.(*Allowance); ok {
		c.Response().Header().Set(echo.HeaderLocation, "/v1/allowances/"+a.locationID())
	}
	return caphttp.Respond(c, http.StatusCreated, out)
}

// List serves GET /v1/allowances?limit=&cursor=.
func (h *Handler) List(c echo.Context) error {
	in := map[string]any{}
	if v := c.QueryParam("cursor"); v != "" {
		in["cursor"] = v
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := page.ParseLimit(v)
		if err != nil {
			return err
		}
		in["limit"] = n
	}
	for k := range c.QueryParams() {
		if k != "cursor" && k != "limit" {
			return problem.Invalid(k, "is not a parameter of this list (limit, cursor)")
		}
	}
	return h.run(c, CapList, in)
}

// Get serves GET /v1/allowances/{id}.
func (h *Handler) Get(c echo.Context) error {
	id, err := server.PathID(c, "allowance")
	if err != nil {
		return err
	}
	return h.run(c, CapGet, map[string]any{"allowance_id": id.String()})
}

func (h *Handler) run(c echo.Context, name string, in map[string]any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	doc, err := capability.ParseInput(raw)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, name, doc, capability.PathREST)
	if err != nil {
		return err
	}
	return caphttp.Respond(c, http.StatusOK, out)
}

// Revoke serves POST /v1/allowances/{id}/revoke {"reason": "..."}
// (reason optional): approvers and admins, at once.
func (h *Handler) Revoke(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	id, err := server.PathID(c, "allowance")
	if err != nil {
		return err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	raw, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if !utf8.Valid(raw) {
			return problem.Invalid("reason", "%s", jsondoc.InvalidUTF8.Message())
		}
		if err := server.DecodeJSONReader(bytes.NewReader(raw), &body); err != nil {
			return err
		}
	}
	a, err := h.Svc.Revoke(c.Request().Context(), p, capability.PathREST, id, body.Reason)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag.FromVersion(a.Version))
	return c.JSON(http.StatusOK, a)
}
