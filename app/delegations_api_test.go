package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/stretchr/testify/require"
)

// Delegations over /v1: bob hands his approvals to carol for an hour
// (201), both list it, only bob ends it; each bad body is 422 naming the
// field (delegation to a clerk among them) with nothing written, and a
// clerk has no approvals to hand over.
func TestDelegationsOverHTTP(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	until := g.clock.Now().Add(time.Hour).UTC()
	ts := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"to a clerk":       {map[string]any{"delegate": "clara", "until": ts(until)}, "delegate"},
		"to oneself":       {map[string]any{"delegate": "bob", "until": ts(until)}, "delegate"},
		"a window of 0":    {map[string]any{"delegate": "carol", "from": ts(until), "until": ts(until)}, "until"},
		"from in the past": {map[string]any{"delegate": "carol", "from": ts(g.clock.Now().Add(-time.Minute)), "until": ts(until)}, "from"},
		"no until":         {map[string]any{"delegate": "carol"}, "until"},
		"until a number":   {map[string]any{"delegate": "carol", "until": 5}, "until"},
		"an unknown field": {map[string]any{"delegate": "carol", "until": ts(until), "for": "ever"}, "for"},
	} {
		resp := g.h.Do(t, "POST", "/v1/delegations", g.bobTok, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %s", name, resp.Body)
		p := resp.Problem(t)
		require.Equal(t, tc.field, p["errors"].([]any)[0].(map[string]any)["field"], name)
	}
	require.Zero(t, g.count(t, `SELECT count(*) FROM approval_delegations`))
	refusedWith(t, g.h.Do(t, "POST", "/v1/delegations", g.clerkTok, map[string]any{"delegate": "carol", "until": ts(until)}), http.StatusForbidden, "FORBIDDEN")

	resp := g.h.Do(t, "POST", "/v1/delegations", g.bobTok, map[string]any{"delegate": "carol", "until": ts(until)})
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(resp.Body))
	var d approvals.Delegation
	resp.JSON(t, &d)
	require.Equal(t, approvals.DelegationActive, d.Status)
	require.Equal(t, "carol", d.Delegate.Username)
	for _, tok := range []string{g.bobTok, g.carolTok} {
		resp = g.h.Do(t, "GET", "/v1/delegations", tok, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
		var list struct{ Data []approvals.Delegation }
		resp.JSON(t, &list)
		require.Len(t, list.Data, 1)
	}
	refusedWith(t, g.h.Do(t, "POST", "/v1/delegations/"+d.ID.String()+"/end", g.carolTok, nil), http.StatusNotFound, "NOT_FOUND")
	resp = g.h.Do(t, "POST", "/v1/delegations/"+d.ID.String()+"/end", g.bobTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &d)
	require.Equal(t, approvals.DelegationEnded, d.Status)
}

// A tier that bob alone decides, escalating to admins after an hour:
// carol is refused until bob hands her his approvals; then her approval
// is bob's, as GET /v1/approvals/{id} shows with who may decide and when
// it escalates, and the invoice issues.
func TestDelegatedDecisionOverHTTP(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	resp := g.h.Do(t, "POST", "/v1/approval-policy/rules", g.adminTok, map[string]any{
		"capability": "issue-invoice", "currency": "EUR", "min_amount": 0, "approvers": 1,
		"deciders": map[string]any{"users": []string{"bob"}}, "escalation": map[string]any{"after": "1h", "role": "admin"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var set approvals.RuleSet
	resp.JSON(t, &set)
	inv := g.draft(t)
	id := refusedWith(t, g.issue(t, inv.ID.String()), http.StatusForbidden, approvals.CodeApprovalRequired)
	refusedWith(t, g.h.Do(t, "POST", "/v1/approvals/"+id+"/approve", g.carolTok, nil), http.StatusForbidden, "FORBIDDEN")

	resp = g.h.Do(t, "POST", "/v1/delegations", g.bobTok, map[string]any{"delegate": "carol", "until": g.clock.Now().Add(time.Hour).Format(time.RFC3339)})
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(resp.Body))
	g.decide(t, g.carolTok, id, "approve", nil)
	resp = g.h.Do(t, "GET", "/v1/approvals/"+id, g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var a approvals.Approval
	resp.JSON(t, &a)
	require.Equal(t, "bob", a.Deciders.Users[0].Username)
	require.Equal(t, a.CreatedAt.Add(time.Hour), a.Escalation.At)
	require.Equal(t, "admin", string(a.Escalation.Audience.Role))
	require.Equal(t, "carol", a.Decisions[0].Approver.Username)
	require.Equal(t, "bob", a.Decisions[0].OnBehalfOf.Username)
	require.Equal(t, http.StatusOK, g.issue(t, inv.ID.String()).StatusCode)
}
