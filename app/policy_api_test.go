package app_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// policyVersion reads the policy in force as the admin.
func (g *gated) policy(t *testing.T, query string) *approvals.RuleSet {
	t.Helper()
	resp := g.h.Do(t, "GET", "/v1/approval-policy"+query, g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var set approvals.RuleSet
	resp.JSON(t, &set)
	return &set
}

// The approval policy over /v1: admins read and change it, with the
// policy version as ETag and If-Match; nobody else does; each refusal is
// a problem naming the field and changes nothing.
func TestApprovalPolicyOverHTTP(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	resp := g.h.Do(t, "GET", "/v1/approval-policy", g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, `"1"`, resp.Header.Get("ETag"))
	policy := g.policy(t, "")
	require.Len(t, policy.Rules, 4, "the seeds for issuing invoices and credit notes, and for payments")
	seed := policy.Rules[slices.IndexFunc(policy.Rules, func(r approvals.Rule) bool { return r.Capability == "issue-invoice" })]
	require.Equal(t, "*", seed.Currency)

	jpy := map[string]any{"capability": "issue-invoice", "currency": "JPY", "min_amount": 1_000_000, "approvers": 2}
	for _, tok := range []string{g.clerkTok, g.bobTok} {
		refusedWith(t, g.h.Do(t, "GET", "/v1/approval-policy", tok, nil), http.StatusForbidden, "FORBIDDEN")
		refusedWith(t, g.h.Do(t, "POST", "/v1/approval-policy/rules", tok, jpy), http.StatusForbidden, "FORBIDDEN")
		refusedWith(t, g.h.Do(t, "DELETE", "/v1/approval-policy/rules/"+seed.ID.String(), tok, nil), http.StatusForbidden, "FORBIDDEN")
	}

	resp = g.h.Do(t, "POST", "/v1/approval-policy/rules", g.adminTok, jpy, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, `"2"`, resp.Header.Get("ETag"))
	var v2 approvals.RuleSet
	resp.JSON(t, &v2)
	require.Len(t, v2.Rules, 5)
	require.Equal(t, "ada", v2.ChangedBy.Username)

	for name, tc := range map[string]struct {
		body    any
		headers []string
		status  int
		code    string
		field   string
	}{
		"stale If-Match": {body: jpy, headers: []string{"If-Match", `"1"`}, status: http.StatusPreconditionFailed, code: "VERSION_MISMATCH"},
		"empty body":     {body: "", status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		"unknown field":  {body: `{"capability":"issue-invoice","currency":"EUR","min_amount":1,"approvers":2,"quorum":2}`, status: 422, code: "VALIDATION_FAILED", field: "quorum"},
		"fraction":       {body: `{"capability":"issue-invoice","currency":"EUR","min_amount":1.5,"approvers":2}`, status: 422, code: "VALIDATION_FAILED", field: "min_amount"},
		"no approvers":   {body: `{"capability":"issue-invoice","currency":"EUR","min_amount":100}`, status: 422, code: "VALIDATION_FAILED", field: "approvers"},
		"read capability": {body: `{"capability":"get-invoice","currency":"EUR","min_amount":100,"approvers":2}`,
			status: 422, code: "VALIDATION_FAILED", field: "capability"},
		"minor for any currency": {body: `{"capability":"issue-invoice","currency":"*","min_amount":1000000,"approvers":2}`,
			status: 422, code: "VALIDATION_FAILED", field: "min_amount_major"},
	} {
		resp := g.h.Do(t, "POST", "/v1/approval-policy/rules", g.adminTok, tc.body, tc.headers...)
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", name, resp.Body)
		p := resp.Problem(t)
		require.Equal(t, tc.code, p["code"], name)
		if tc.field != "" {
			require.Equal(t, tc.field, p["errors"].([]any)[0].(map[string]any)["field"], "%s: %s", name, resp.Body)
		}
		require.EqualValues(t, 2, g.policy(t, "").Version, "%s changed nothing", name)
	}
	refusedWith(t, g.h.Do(t, "DELETE", "/v1/approval-policy/rules/not-an-id", g.adminTok, nil), http.StatusNotFound, "NOT_FOUND")
	refusedWith(t, g.h.Do(t, "DELETE", "/v1/approval-policy/rules/01900000-0000-7000-8000-000000000000", g.adminTok, nil), http.StatusNotFound, "NOT_FOUND")
	refusedWith(t, g.h.Do(t, "GET", "/v1/approval-policy?version=0", g.adminTok, nil), http.StatusUnprocessableEntity, "VALIDATION_FAILED")
	refusedWith(t, g.h.Do(t, "GET", "/v1/approval-policy?version=9", g.adminTok, nil), http.StatusNotFound, "NOT_FOUND")

	resp = g.h.Do(t, "DELETE", "/v1/approval-policy/rules/"+seed.ID.String(), g.adminTok, nil, "If-Match", `"2"`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, `"3"`, resp.Header.Get("ETag"))
	require.Len(t, g.policy(t, "").Rules, 4)
	require.Len(t, g.policy(t, "?version=2").Rules, 5, "version 2 reads back as it was")
}

// Done-when over HTTP: a ¥1,000,000 rule and a €10,000 rule side by side;
// each invoice at a boundary needs what its currency's rule says, and the
// approval shows the rule it was raised under.
func TestYenAndEuroInvoicesIssueByTheirOwnRules(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	for _, rule := range []map[string]any{
		{"capability": "issue-invoice", "currency": "JPY", "min_amount": 1_000_000, "approvers": 2},
		{"capability": "issue-invoice", "currency": "EUR", "min_amount": 1_000_000, "approvers": 2},
	} {
		resp := g.h.Do(t, "POST", "/v1/approval-policy/rules", g.adminTok, rule)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	}
	for _, tc := range []struct {
		currency string
		total    int64
		want     int
	}{
		{"JPY", 10_000, 1},
		{"JPY", 999_999, 1},
		{"JPY", 1_000_000, 2},
		{"EUR", 999_999, 1},
		{"EUR", 1_000_000, 2},
	} {
		inv := invoicetest.Draft(g.ctx, t, g.h.Pool, invoicetest.DraftOpts{Currency: tc.currency,
			Lines: []invoices.LineInput{{Description: "work", Quantity: 1 * quantity.One, UnitAmount: tc.total}}})
		require.Equal(t, tc.total, inv.Total)
		resp := g.issue(t, inv.ID.String())
		id := refusedWith(t, resp, http.StatusForbidden, "APPROVAL_REQUIRED")
		require.EqualValues(t, tc.want, resp.Problem(t)["required_approvals"], "%+v", tc)
		r := g.h.Do(t, "GET", "/v1/approvals/"+id, g.bobTok, nil)
		var a approvals.Approval
		r.JSON(t, &a)
		require.Equal(t, tc.want, a.RequiredApprovals)
		require.EqualValues(t, 3, a.Policy.Version)
		require.Equal(t, tc.want == 2, a.Policy.RuleID != nil, "%+v", tc)

		g.decide(t, g.bobTok, id, "approve", nil)
		if tc.want == 2 {
			refusedWith(t, g.issue(t, inv.ID.String()), http.StatusForbidden, "APPROVAL_REQUIRED")
			g.decide(t, g.carolTok, id, "approve", nil)
		}
		resp = g.issue(t, inv.ID.String())
		require.Equal(t, http.StatusOK, resp.StatusCode, "%+v: %s", tc, resp.Body)
	}
}
