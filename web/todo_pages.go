package web

import (
	"net/http"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

// These wait for the approvals decision API and the invoices package.
func (h *Handler) invoices(c echo.Context, s *Session) error {
	return problem.New(http.StatusNotImplemented, "NOT_IMPLEMENTED", "invoices are not wired yet")
}
func (h *Handler) invoice(c echo.Context, s *Session) error {
	return problem.New(http.StatusNotImplemented, "NOT_IMPLEMENTED", "invoices are not wired yet")
}
func (h *Handler) currentVersion(c echo.Context, a *approvals.Approval) (int64, bool) {
	return 0, false
}
