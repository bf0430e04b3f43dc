package web

import (
	"net/http"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// formTime is how the page's datetime-local fields write a time; the page
// says they are UTC, as every time it shows is.
const formTime = "2006-01-02T15:04"

type delegationsView struct {
	CanDelegate bool
	Made, Held  []*approvals.Delegation
	// Delegate, From and Until are the form as sent, shown again with a
	// refusal.
	Delegate, From, Until string
}

// Delegations is the page GET /delegations: the delegations the user made
// and holds, and, for approvers and admins, the form to hand theirs over.
func (h *Handler) Delegations(c echo.Context, s *Session) error {
	return h.delegationsPage(c, s, http.StatusOK, nil, delegationsView{})
}

func (h *Handler) delegationsPage(c echo.Context, s *Session, status int, refusal *problem.Error, form delegationsView) error {
	ds, err := h.deps.Approvals.DelegationList(c.Request().Context(), s.User.Principal())
	if err != nil {
		return err
	}
	v := form
	v.CanDelegate = s.User.Role.CanDecide()
	for _, d := range ds {
		if d.Delegator.ID == s.User.ID {
			v.Made = append(v.Made, d)
		} else {
			v.Held = append(v.Held, d)
		}
	}
	d := h.data(c, s, "Delegations")
	switch c.QueryParam("done") {
	case "created":
		d.Notice = "Your approvals are handed over for that window."
	case "ended":
		d.Notice = "The delegation has ended."
	}
	if refusal != nil {
		d.Error = refusalText(refusal)
	}
	d.Data = v
	return h.render(c, status, "delegations", d)
}

// DelegationCreate answers the form POST /delegations: the fields'
// times are UTC; the service's refusals are the page's.
func (h *Handler) DelegationCreate(c echo.Context, s *Session) error {
	form := delegationsView{Delegate: c.FormValue("delegate"), From: c.FormValue("from"), Until: c.FormValue("until")}
	in := approvals.DelegationInput{Delegate: form.Delegate}
	var bad []problem.FieldError
	for _, f := range []struct {
		name, value string
		to          *string
	}{{"from", form.From, &in.From}, {"until", form.Until, &in.Until}} {
		if f.value == "" {
			continue
		}
		t, err := time.Parse(formTime, f.value)
		if err != nil {
			bad = append(bad, problem.FieldError{Field: f.name, Message: "must be a date and time such as 2026-12-24T09:00"})
			continue
		}
		*f.to = t.Format(time.RFC3339)
	}
	var err error
	if len(bad) > 0 {
		err = problem.Validation(bad...)
	} else {
		_, err = h.deps.Approvals.DelegationCreate(c.Request().Context(), s.User.Principal(), capability.PathWeb, in)
	}
	if err != nil {
		pe, ok := problem.As(err)
		if !ok || pe.Status >= 500 {
			return err
		}
		return h.delegationsPage(c, s, pe.Status, pe, form)
	}
	return c.Redirect(http.StatusSeeOther, "/delegations?done=created")
}

// DelegationEnd answers POST /delegations/{id}/end: its delegator ends it.
func (h *Handler) DelegationEnd(c echo.Context, s *Session) error {
	id, err := server.PathID(c, "delegation")
	if err != nil {
		return err
	}
	if _, err := h.deps.Approvals.DelegationEnd(c.Request().Context(), s.User.Principal(), capability.PathWeb, id); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/delegations?done=ended")
}
