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
