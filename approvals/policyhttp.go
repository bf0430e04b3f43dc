package approvals

import (
	"net/http"
	"strconv"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// PolicyHandler serves /v1/approval-policy; app's route table lists its
// routes, for admins only.
type PolicyHandler struct {
	Svc *Service
}

// respond answers with the policy and its version as the ETag.
func respondPolicy(c echo.Context, set *RuleSet) error {
	c.Response().Header().Set("ETag", etag.FromVersion(set.Version))
	return c.JSON(http.StatusOK, set)
}

// Get answers GET /v1/approval-policy: the rules in force, or with
// ?version=N those in force at version N.
func (h *PolicyHandler) Get(c echo.Context) error {
	var version int64
	if v := c.QueryParam("version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return problem.Invalid("version", "must be a positive policy version")
		}
		version = n
	}
	set, err := h.Svc.PolicyGet(c.Request().Context(), version)
	if err != nil {
		return err
	}
	return respondPolicy(c, set)
}

// SetRule answers POST /v1/approval-policy/rules (a RuleInput): it sets
// the tier of that capability, currency and threshold.
func (h *PolicyHandler) SetRule(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	ifMatch, err := etag.ReadIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	var in RuleInput
	if err := server.DecodeJSON(c, &in); err != nil {
		return err
	}
	set, err := h.Svc.PolicySet(c.Request().Context(), p, capability.PathREST, in, ifMatch)
	if err != nil {
		return err
	}
	return respondPolicy(c, set)
}

// DeleteRule answers DELETE /v1/approval-policy/rules/{id}.
func (h *PolicyHandler) DeleteRule(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	id, err := server.PathID(c, "approval rule")
	if err != nil {
		return err
	}
	ifMatch, err := etag.ReadIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	set, err := h.Svc.PolicyDelete(c.Request().Context(), p, capability.PathREST, id, ifMatch)
	if err != nil {
		return err
	}
	return respondPolicy(c, set)
}
