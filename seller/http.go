package seller

import (
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves /v1/seller; app's route table lists its routes: GET for
// every signed-in user (a clerk sees what the invoice will say), PUT for
// admins.
type Handler struct {
	Svc *Service
}

// respond answers with the seller and its version as the ETag.
func respond(c echo.Context, s *Seller) error {
	c.Response().Header().Set("ETag", etag.FromVersion(s.Version))
	return c.JSON(http.StatusOK, s)
}

// Get answers GET /v1/seller: 404 while none is set.
func (h *Handler) Get(c echo.Context) error {
	s, err := h.Svc.Get(c.Request().Context())
	if err != nil {
		return err
	}
	return respond(c, s)
}

// Put answers PUT /v1/seller (Details, all of them): If-Match names the
// version it replaces, or If-None-Match: * sets the first seller; neither
// is 428 PRECONDITION_REQUIRED.
func (h *Handler) Put(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	pre, err := readPrecondition(c.Request().Header)
	if err != nil {
		return err
	}
	var in Details
	if err := server.DecodeJSON(c, &in); err != nil {
		return err
	}
	s, err := h.Svc.Set(c.Request().Context(), p, capability.PathREST, in, pre)
	if err != nil {
		return err
	}
	return respond(c, s)
}

// readPrecondition reads If-Match (all its field lines; empty is none)
// and whether If-None-Match is *; an If-None-Match that lists tags says
// nothing a PUT of the seller can use, so it is not a precondition of
// one.
func readPrecondition(h http.Header) (Precondition, error) {
	var pre Precondition
	if strings.Trim(strings.Join(h.Values("If-Match"), ""), " \t") != "" {
		m, err := etag.ReadIfMatch(h)
		if err != nil {
			return pre, err
		}
		pre.Exists, pre.Match = true, m
	}
	pre.Absent = strings.Trim(strings.Join(h.Values("If-None-Match"), ","), " \t") == "*"
	return pre, nil
}
