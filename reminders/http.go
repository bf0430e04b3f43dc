package reminders

import (
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves the reminder routes; app's route table lists them: the
// settings (read by every signed-in user, set by admins), the reminders
// ahead, and the capabilities over an invoice or a customer.
type Handler struct {
	Svc *Service
	Inv *invoices.Handler
}

func respond(c echo.Context, s *Settings) error {
	c.Response().Header().Set("ETag", etag.FromVersion(s.Version))
	return c.JSON(http.StatusOK, s)
}

// Settings answers GET /v1/reminders/settings.
func (h *Handler) Settings(c echo.Context) error {
	s, err := h.Svc.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	return respond(c, s)
}

// SetSettings answers PUT /v1/reminders/settings (Input, all of it; an
// If-Match, when sent, must name the current version).
func (h *Handler) SetSettings(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	var match *etag.IfMatch
	if strings.Trim(strings.Join(c.Request().Header.Values("If-Match"), ""), " \t") != "" {
		m, err := etag.ReadIfMatch(c.Request().Header)
		if err != nil {
			return err
		}
		match = &m
	}
	var in Input
	if err := server.DecodeJSON(c, &in); err != nil {
		return err
	}
	s, err := h.Svc.SetSettings(c.Request().Context(), p, capability.PathREST, in, match)
	if err != nil {
		return err
	}
	return respond(c, s)
}

// Upcoming answers GET /v1/reminders/upcoming (list-upcoming-reminders).
func (h *Handler) Upcoming(c echo.Context) error { return h.Inv.ListUnder(c, CapUpcoming, "", "") }

// Send answers POST /v1/invoices/{id}/remind (send-reminder): 202, the
// sending queued.
func (h *Handler) Send(c echo.Context) error {
	return h.Inv.Run(c, CapSend, "invoice_id", "invoice", http.StatusAccepted)
}

// Dispute answers PUT /v1/invoices/{id}/dispute (set-invoice-dispute).
func (h *Handler) Dispute(c echo.Context) error {
	return h.Inv.Run(c, CapDispute, "invoice_id", "invoice", http.StatusOK)
}

// Hold answers PUT /v1/customers/{id}/hold (set-customer-hold).
func (h *Handler) Hold(c echo.Context) error {
	return h.Inv.Run(c, CapHold, "customer_id", "customer", http.StatusOK)
}
