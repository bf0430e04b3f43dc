package app_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// setRule puts a tier in force as the admin.
func (g *gated) setRule(t *testing.T, rule map[string]any) {
	t.Helper()
	resp := g.h.Do(t, "POST", "/v1/approval-policy/rules", g.adminTok, rule)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

// Issue 40, done-when: 20 invoices of 600 EUR to one customer, each
// approved by one approver, issued at once under a 30-day customer window
// tier at 10,000 EUR that asks two: the calls whose running sum crosses
// it (the 17th on: 16 × 600 = 9,600, 17 × 600 = 10,200) need the higher
// tier, and the window's sum afterwards is what was issued. Another
// customer's invoice is outside the scope.
func TestWindowTierCountsConcurrentIssues(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	g.setRule(t, map[string]any{"capability": "issue-invoice", "currency": "EUR", "min_amount": 1_000_000, "approvers": 2,
		"window_days": 30, "scope": "customer"})
	c := invoicetest.Customer(g.ctx, t, g.h.Pool, invoicetest.CustomerOpts{})
	line := []invoices.LineInput{{Description: "Support", Quantity: quantity.One, UnitAmount: 60_000}}
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		inv := invoicetest.Draft(g.ctx, t, g.h.Pool, invoicetest.DraftOpts{CustomerID: &c.ID, Lines: line})
		require.EqualValues(t, 60_000, inv.Total)
		ids[i] = inv.ID.String()
		// Nothing issued yet: 600 EUR alone is under the tier.
		resp := g.issue(t, ids[i])
		aid := refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired)
		require.EqualValues(t, 1, resp.Problem(t)["required_approvals"])
		g.decide(t, g.bobTok, aid, "approve", nil)
	}

	results := make([]*apptest.Response, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = g.issue(t, id)
		}()
	}
	wg.Wait()
	issued := 0
	var raised []string
	for _, r := range results {
		if r.StatusCode == http.StatusOK {
			issued++
			continue
		}
		raised = append(raised, refusedWith(t, r, http.StatusForbidden, approvals.CodeApprovalRequired))
		p := r.Problem(t)
		require.EqualValues(t, 2, p["required_approvals"], string(r.Body))
		require.EqualValues(t, 1, p["approvals"])
		w := p["windows"].([]any)[0].(map[string]any)
		require.EqualValues(t, 960_000, w["sum"], "what the 16 issued before it add up to")
		require.EqualValues(t, 16, w["count"])
		require.EqualValues(t, 60_000, w["amount"])
		require.Contains(t, p["detail"], "10,200.00")
	}
	require.Equal(t, 16, issued)
	require.Len(t, raised, 4)
	require.Equal(t, 16, g.count(t, `SELECT count(*) FROM invoices WHERE customer_id = $1 AND status = 'issued'`, c.ID))
	require.Equal(t, 16, g.count(t, `SELECT count(*) FROM policy_effects WHERE capability = 'issue-invoice' AND customer_id = $1`, c.ID))
	require.Equal(t, 960_000, g.count(t, `SELECT sum(amount)::int FROM policy_effects WHERE capability = 'issue-invoice' AND customer_id = $1`, c.ID))
	require.Equal(t, 960_000, g.count(t, `SELECT sum(total)::int FROM invoices WHERE customer_id = $1 AND status = 'issued'`, c.ID))

	// The request says what it counted: the approver reads the sum, the
	// count and the invoices.
	var a approvals.Approval
	g.h.Do(t, "GET", "/v1/approvals/"+raised[0], g.bobTok, nil).JSON(t, &a)
	require.Equal(t, approvals.StatusPending, a.Status)
	require.Equal(t, 2, a.RequiredApprovals)
	require.Len(t, a.Windows, 1)
	require.EqualValues(t, 960_000, a.Windows[0].Sum)
	require.Len(t, a.Windows[0].Targets, 16)

	// A second approver: the raised request issues, and the sum grows.
	g.decide(t, g.carolTok, raised[0], "approve", nil)
	var idOf string
	for i, r := range results {
		if r.StatusCode != http.StatusOK && refusedWith(t, r, http.StatusForbidden, approvals.CodeApprovalRequired) == raised[0] {
			idOf = ids[i]
		}
	}
	require.Equal(t, http.StatusOK, g.issue(t, idOf).StatusCode)
	require.Equal(t, 1_020_000, g.count(t, `SELECT sum(amount)::int FROM policy_effects WHERE customer_id = $1`, c.ID))

	// Thirty days on, what was issued has left the window.
	g.clock.Advance(30*24*time.Hour + time.Second)
	later := invoicetest.Draft(g.ctx, t, g.h.Pool, invoicetest.DraftOpts{CustomerID: &c.ID, Lines: line}).ID.String()
	resp := g.issue(t, later)
	refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired)
	require.EqualValues(t, 1, resp.Problem(t)["required_approvals"])
	require.EqualValues(t, 0, resp.Problem(t)["windows"].([]any)[0].(map[string]any)["count"])

	// Another customer's 600 EUR is judged by its own window.
	other := invoicetest.Draft(g.ctx, t, g.h.Pool, invoicetest.DraftOpts{Lines: line}).ID.String()
	resp = g.issue(t, other)
	refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired)
	require.EqualValues(t, 1, resp.Problem(t)["required_approvals"])
}

// Issue 40, done-when: a rule's bad window or scope, a consequential
// capability without an approver, a capability the policy cannot govern:
// each 422 naming its field, with nothing written.
func TestPolicyWindowBadInput(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	before := g.policy(t, "").Version
	audits := g.count(t, `SELECT count(*) FROM audit_events`)
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"capability": "issue-invoice", "currency": "EUR", "min_amount": 1_000_000, "approvers": 2}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"a window of 0":             {base(map[string]any{"window_days": 0, "scope": "customer"}), "window_days"},
		"a negative window":         {base(map[string]any{"window_days": -30, "scope": "customer"}), "window_days"},
		"a window past a year":      {base(map[string]any{"window_days": 367, "scope": "customer"}), "window_days"},
		"a window without a scope":  {base(map[string]any{"window_days": 30}), "scope"},
		"a scope without a window":  {base(map[string]any{"scope": "customer"}), "window_days"},
		"an unknown scope":          {base(map[string]any{"window_days": 30, "scope": "team"}), "scope"},
		"void without an approver":  {base(map[string]any{"capability": "void-invoice", "approvers": 0}), "approvers"},
		"issue without an approver": {base(map[string]any{"approvers": 0}), "approvers"},
		"eleven approvers":          {base(map[string]any{"capability": "record-payment", "approvers": 11}), "approvers"},
		"an ungoverned capability":  {base(map[string]any{"capability": "create-customer"}), "capability"},
	} {
		resp := g.h.Do(t, "POST", "/v1/approval-policy/rules", g.adminTok, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s: %s", name, resp.Body)
		p := resp.Problem(t)
		require.Equal(t, "VALIDATION_FAILED", p["code"], name)
		require.Equal(t, tc.field, p["errors"].([]any)[0].(map[string]any)["field"], "%s: %s", name, resp.Body)
		require.Equal(t, before, g.policy(t, "").Version, "%s changed nothing", name)
		require.Equal(t, audits, g.count(t, `SELECT count(*) FROM audit_events`), "%s audited nothing", name)
	}
	// A governed bound capability may need no approver: yen payments
	// leave the any-currency seed.
	g.setRule(t, map[string]any{"capability": "record-payment", "currency": "JPY", "min_amount": 0, "approvers": 0})
	require.Equal(t, before+1, g.policy(t, "").Version)
}

// Issue 40, done-when: a void of an issued invoice, and a payment or a
// mark-paid at or above a configured tier (two approvers from 5,000 EUR),
// answer 403 APPROVAL_REQUIRED over REST and through invoke, with the
// same request; below the tier a payment needs no one. Approved, each
// takes effect once and its effect names the approval.
func TestVoidAndLargePaymentsNeedApproval(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	g.setRule(t, map[string]any{"capability": "record-payment", "currency": "EUR", "min_amount": 500_000, "approvers": 2})
	g.setRule(t, map[string]any{"capability": "mark-invoice-paid", "currency": "EUR", "min_amount": 500_000, "approvers": 2})
	big := []invoices.LineInput{{Description: "Licence", Quantity: quantity.One, UnitAmount: 5_000_000}}
	inv := invoicetest.Issued(g.ctx, t, g.h.Pool, invoicetest.DraftOpts{Lines: big}).ID.String()
	invoke := func(capName string, input map[string]any) *apptest.Response {
		return g.h.Do(t, "POST", "/v1/capabilities/"+capName+"/invoke", g.clerkTok, map[string]any{"input": input})
	}

	void := refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+inv+"/void", g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, void, refusedWith(t, invoke("void-invoice", map[string]any{"invoice_id": inv}), http.StatusForbidden, approvals.CodeApprovalRequired))

	today := time.Now().UTC().Format(time.DateOnly)
	pay := map[string]any{"amount": 600_000, "received_on": today, "method": "bank_transfer"}
	resp := g.h.Do(t, "POST", "/v1/invoices/"+inv+"/payments", g.clerkTok, pay)
	payment := refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired)
	require.EqualValues(t, 2, resp.Problem(t)["required_approvals"])
	withID := map[string]any{"invoice_id": inv}
	for k, v := range pay {
		withID[k] = v
	}
	require.Equal(t, payment, refusedWith(t, invoke("record-payment", withID), http.StatusForbidden, approvals.CodeApprovalRequired))
	paid := refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+inv+"/mark-paid", g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, paid, refusedWith(t, invoke("mark-invoice-paid", map[string]any{"invoice_id": inv}), http.StatusForbidden, approvals.CodeApprovalRequired))
	require.Equal(t, 0, g.count(t, `SELECT count(*) FROM payments`))
	require.Equal(t, "issued", g.status(t, inv))

	// Under the tier a payment goes through alone, and counts as an effect.
	small := map[string]any{"amount": 10_000, "received_on": today, "method": "card"}
	resp = g.h.Do(t, "POST", "/v1/invoices/"+inv+"/payments", g.clerkTok, small)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(resp.Body))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM policy_effects WHERE capability = 'record-payment' AND approval_id IS NULL`))
	var smallPayment invoices.Payment
	resp.JSON(t, &smallPayment)

	// The large one, approved by two: the invoice changed (a payment), so
	// the request is stale and asked anew.
	resp = g.h.Do(t, "POST", "/v1/invoices/"+inv+"/payments", g.clerkTok, pay)
	refusedWith(t, resp, http.StatusConflict, approvals.CodeApprovalStale)
	payment = refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+inv+"/payments", g.clerkTok, pay), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, payment, "approve", nil)
	refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+inv+"/payments", g.clerkTok, pay), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.carolTok, payment, "approve", nil)
	resp = g.h.Do(t, "POST", "/v1/invoices/"+inv+"/payments", g.clerkTok, pay)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(resp.Body))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM policy_effects WHERE capability = 'record-payment' AND approval_id = $1`, payment))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM audit_events WHERE type = 'payment.recorded' AND event->'data'->>'approval_id' = $1`, payment))

	// Reversing a payment is governed too: with a tier of its own from 0,
	// every reversal asks one approver, through invoke as over REST.
	g.setRule(t, map[string]any{"capability": "reverse-payment", "currency": "EUR", "min_amount": 0, "approvers": 1})
	reverse := map[string]any{"reason": "the card payment was charged back"}
	rev := refusedWith(t, g.h.Do(t, "POST", "/v1/payments/"+smallPayment.ID.String()+"/reverse", g.clerkTok, reverse), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, rev, refusedWith(t, invoke("reverse-payment", map[string]any{"payment_id": smallPayment.ID.String(), "reason": reverse["reason"]}),
		http.StatusForbidden, approvals.CodeApprovalRequired))
	require.Equal(t, 0, g.count(t, `SELECT count(*) FROM payments WHERE reversed_at IS NOT NULL`))
}

// holdRow locks invoice id in a transaction of its own until the returned
// release, so that a call authenticated now reaches the gate later.
func holdRow(t *testing.T, g *gated, id string) (release func()) {
	t.Helper()
	tx, err := g.h.Pool.Begin(g.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(g.ctx, `SELECT 1 FROM invoices WHERE id = $1 FOR UPDATE`, id)
	require.NoError(t, err)
	return func() { require.NoError(t, tx.Commit(g.ctx)) }
}

// waitBlocked waits until a statement waits on a row lock.
func waitBlocked(t *testing.T, g *gated) {
	t.Helper()
	require.Eventually(t, func() bool {
		return g.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}, 10*time.Second, 10*time.Millisecond)
}

// Issue 40, done-when (REST): a requester disabled after their call was
// authenticated, while it waited, cannot spend its approved approval;
// nor can their token afterwards.
func TestDisabledRequesterCannotSpendOverREST(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	inv := invoicetest.Issued(g.ctx, t, g.h.Pool, invoicetest.DraftOpts{}).ID.String()
	void := refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+inv+"/void", g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, void, "approve", nil)

	release := holdRow(t, g, inv)
	done := make(chan *apptest.Response, 1)
	go func() { done <- g.h.Do(t, "POST", "/v1/invoices/"+inv+"/void", g.clerkTok, nil) }()
	waitBlocked(t, g)
	resp := g.patchUser(t, g.clerk.ID.String(), map[string]any{"disabled": true})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	release()
	refusedWith(t, <-done, http.StatusForbidden, "FORBIDDEN")
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM invoices WHERE id = $1 AND status = 'issued'`, inv))
	var a approvals.Approval
	g.h.Do(t, "GET", "/v1/approvals/"+void, g.bobTok, nil).JSON(t, &a)
	require.Equal(t, approvals.StatusApproved, a.Status, "nothing spent")
	refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+inv+"/void", g.clerkTok, nil), http.StatusUnauthorized, "UNAUTHENTICATED")
	require.Equal(t, 0, g.count(t, `SELECT count(*) FROM policy_effects`))
}
