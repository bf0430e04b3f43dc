package approvals

import (
	"net/http"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// DelegationHandler serves /v1/delegations: an approver's hand-overs of
// their approvals; app's route table lists its routes.
type DelegationHandler struct {
	Svc *Service
}

// Create answers POST /v1/delegations {delegate, from, until}: 201 with
// the delegation.
func (h *DelegationHandler) Create(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	var in DelegationInput
	if err := server.DecodeJSON(c, &in); err != nil {
		return err
	}
	d, err := h.Svc.DelegationCreate(c.Request().Context(), p, capability.PathREST, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, d)
}

// List answers GET /v1/delegations: those the caller made or holds,
// newest first.
func (h *DelegationHandler) List(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	ds, err := h.Svc.DelegationList(c.Request().Context(), p)
	if err != nil {
		return err
	}
	if ds == nil {
		ds = []*Delegation{}
	}
	// One page: a person makes and holds few delegations (the list is
	// bounded at 500).
	return c.JSON(http.StatusOK, page.List[*Delegation]{Data: ds})
}

// End answers POST /v1/delegations/{id}/end: the delegator ends it now.
func (h *DelegationHandler) End(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	id, err := server.PathID(c, "delegation")
	if err != nil {
		return err
	}
	d, err := h.Svc.DelegationEnd(c.Request().Context(), p, capability.PathREST, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}
