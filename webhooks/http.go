package webhooks

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves /v1/webhook-endpoints and /v1/webhook-deliveries (admins
// only; the service checks).
type Handler struct {
	Svc *Service
}

// target is the caller and the {id} of the resource (what, for a 404) a
// route names.
func target(c echo.Context, what string) (identity.Principal, uuid.UUID, error) {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return p, uuid.Nil, err
	}
	id, err := server.PathID(c, what)
	return p, id, err
}

// addBody is POST /v1/webhook-endpoints's body.
type addBody struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

// Add answers POST /v1/webhook-endpoints {url, events}: 201 with the
// secret, shown this once.
func (h *Handler) Add(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	var body addBody
	if err := server.DecodeJSON(c, &body); err != nil {
		return err
	}
	e, err := h.Svc.Add(c.Request().Context(), p, capability.PathREST, body.URL, body.Events)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/v1/webhook-endpoints/"+e.ID.String())
	c.Response().Header().Set("ETag", etag.FromVersion(e.Version))
	return c.JSON(http.StatusCreated, e)
}

// List answers GET /v1/webhook-endpoints?cursor=&limit=.
func (h *Handler) List(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	r, err := server.PageQuery(c)
	if err != nil {
		return err
	}
	list, err := h.Svc.List(c.Request().Context(), p, r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// Get answers GET /v1/webhook-endpoints/{id}.
func (h *Handler) Get(c echo.Context) error {
	p, id, err := target(c, "webhook endpoint")
	if err != nil {
		return err
	}
	e, err := h.Svc.Get(c.Request().Context(), p, id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag.FromVersion(e.Version))
	return c.JSON(http.StatusOK, e)
}

// change parses the principal, the id and If-Match of an endpoint action.
func change(c echo.Context) (identity.Principal, uuid.UUID, etag.IfMatch, error) {
	p, id, err := target(c, "webhook endpoint")
	if err != nil {
		return p, uuid.Nil, etag.IfMatch{}, err
	}
	ifMatch, err := etag.ReadIfMatch(c.Request().Header)
	return p, id, ifMatch, err
}

func (h *Handler) setEnabled(c echo.Context, enabled bool) error {
	p, id, ifMatch, err := change(c)
	if err != nil {
		return err
	}
	e, err := h.Svc.SetEnabled(c.Request().Context(), p, capability.PathREST, id, ifMatch, enabled)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag.FromVersion(e.Version))
	return c.JSON(http.StatusOK, e)
}

// Disable answers POST /v1/webhook-endpoints/{id}/disable.
func (h *Handler) Disable(c echo.Context) error { return h.setEnabled(c, false) }

// Enable answers POST /v1/webhook-endpoints/{id}/enable.
func (h *Handler) Enable(c echo.Context) error { return h.setEnabled(c, true) }

// RotateSecret answers POST /v1/webhook-endpoints/{id}/rotate-secret with
// the new secret, shown this once.
func (h *Handler) RotateSecret(c echo.Context) error {
	p, id, ifMatch, err := change(c)
	if err != nil {
		return err
	}
	e, err := h.Svc.RotateSecret(c.Request().Context(), p, capability.PathREST, id, ifMatch)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag.FromVersion(e.Version))
	return c.JSON(http.StatusOK, e)
}

// Deliveries answers GET /v1/webhook-endpoints/{id}/deliveries: the
// endpoint's deliveries, newest first, each with its attempts.
func (h *Handler) Deliveries(c echo.Context) error {
	p, id, err := target(c, "webhook endpoint")
	if err != nil {
		return err
	}
	r, err := server.PageQuery(c)
	if err != nil {
		return err
	}
	list, err := h.Svc.Deliveries(c.Request().Context(), p, id, r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// Delivery answers GET /v1/webhook-deliveries/{id}.
func (h *Handler) Delivery(c echo.Context) error {
	p, id, err := target(c, "webhook delivery")
	if err != nil {
		return err
	}
	d, err := h.Svc.Delivery(c.Request().Context(), p, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// Redeliver answers POST /v1/webhook-deliveries/{id}/redeliver: 202, the
// delivery queued to be sent again.
func (h *Handler) Redeliver(c echo.Context) error {
	p, id, err := target(c, "webhook delivery")
	if err != nil {
		return err
	}
	d, err := h.Svc.Redeliver(c.Request().Context(), p, capability.PathREST, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, d)
}
