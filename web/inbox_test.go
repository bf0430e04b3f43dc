package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// snapshotEUR is an invoice as the invoices package snapshots it: two
// lines, 19 % and 7 % tax, totals that add up.
func snapshotEUR(invoiceID string) json.RawMessage {
	return json.RawMessage(`{"id":"` + invoiceID + `","status":"draft","number":null,"customer_id":"c1",
		"customer":{"id":"c1","name":"Globex GmbH","email":"ap@globex.example"},"currency":"EUR","due_date":"2026-12-31","memo":"",
		"lines":[{"description":"Consulting","quantity":3,"unit_amount":12000,"tax_rate_bps":1900,"amount":36000,"tax_amount":6840},
		         {"description":"Books","quantity":1,"unit_amount":2550,"tax_rate_bps":700,"amount":2550,"tax_amount":178}],
		"subtotal":38550,"tax_total":7018,"total":45568,"version":1}`)
}

// request asks for issue-invoice on a fresh invoice id through the
// approvals gate, as the agent of clerk in conversation conv would, and
// returns the pending request's id.
func (b *bundle) request(t *testing.T, clerk *identity.User, via capability.Path) uuid.UUID {
	t.Helper()
	invoiceID := uuid.Must(uuid.NewV7()).String()
	return b.requestFor(t, clerk, via, capability.Target{Type: "invoice", ID: invoiceID, Version: 1, Amount: 45568, Currency: "EUR", Snapshot: snapshotEUR(invoiceID)})
}

// requestFor asks for issue-invoice on target as request does.
func (b *bundle) requestFor(t *testing.T, clerk *identity.User, via capability.Path, target capability.Target) uuid.UUID {
	t.Helper()
	return b.requestCall(t, "issue-invoice", clerk, via, target)
}

// requestCall asks for the consequential capability name on target as
// request does.
func (b *bundle) requestCall(t *testing.T, name string, clerk *identity.User, via capability.Path, target capability.Target) uuid.UUID {
	t.Helper()
	input := json.RawMessage(`{"invoice_id":"` + target.ID + `"}`)
	hash, err := jsondoc.Hash(input)
	require.NoError(t, err)
	call := capability.Call{Name: name, Principal: clerk.Principal(), Via: via, Input: input, InputHash: hash}
	err = store.WithTx(context.Background(), b.h.Pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := b.h.App.ApprovalGate().AuthorizeTx(ctx, tx, call, target)
		return err
	})
	pe, ok := problem.As(err)
	require.True(t, ok, "want APPROVAL_REQUIRED, got %v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code)
	return uuid.MustParse(pe.Extra["approval_id"].(string))
}

func (b *bundle) approval(t *testing.T, id uuid.UUID) *approvals.Approval {
	t.Helper()
	a, err := approvals.ApprovalGetByID(context.Background(), b.h.Pool, id)
	require.NoError(t, err)
	return a
}

func TestInboxShowsAgentRequestAndApproverApproves(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	id := b.request(t, clerk, capability.AgentPath("conv-7f3a9c21"))

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	p := br.do(http.MethodGet, "/inbox", nil)
	require.Equal(t, http.StatusOK, p.status)
	pending := p.body[strings.Index(p.body, `id="pending-h"`):strings.Index(p.body, `id="recent-h"`)]
	require.Contains(t, pending, `data-request-id="`+id.String()+`"`)
	require.Contains(t, pending, "Agent</span> for carl")
	require.Contains(t, pending, "conv-7f3")
	require.Contains(t, pending, "455.68")
	require.Contains(t, pending, "0 of 1")
	require.Contains(t, pending, "Globex GmbH")

	p = br.do(http.MethodGet, "/approvals/"+id.String(), nil)
	require.Equal(t, http.StatusOK, p.status)
	for _, want := range []string{"Globex GmbH", "Consulting", "360.00", "68.40", "385.50", "70.18", "455.68", "19 %", "conv-7f3a9c21", `action="/approvals/` + id.String() + `/approve"`} {
		require.Contains(t, p.body, want)
	}

	res := br.do(http.MethodPost, "/approvals/"+id.String()+"/approve", url.Values{"csrf_token": {csrfOf(t, p)}, "reason": {"checked against PO 4711"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, "/approvals/"+id.String()+"?done=approve", res.header.Get("Location"))
	a := b.approval(t, id)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.Len(t, a.Decisions, 1)
	require.Equal(t, "alice", a.Decisions[0].Approver.Username)

	p = br.do(http.MethodGet, res.header.Get("Location"), nil)
	require.Contains(t, p.body, "You approved this request.")
	require.Contains(t, p.body, "checked against PO 4711")
	require.NotContains(t, p.body, `/approve"`, "a decided request has no decide buttons")
}

func TestRequesterAndClerkSeeNoButtonsAndServerRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	approver := b.user(t, "apu", identity.RoleApprover)
	byClerk := b.request(t, clerk, capability.AgentPath("conv-1"))
	byApprover := b.request(t, approver, capability.PathREST)

	for _, c := range []struct {
		user string
		id   uuid.UUID
		why  string
	}{
		{"carl", byClerk, "may not decide"},
		{"apu", byApprover, "You asked for this approval"},
	} {
		br := b.browser(t)
		require.Equal(t, http.StatusSeeOther, br.signIn(c.user, testPassword).status)
		p := br.do(http.MethodGet, "/approvals/"+c.id.String(), nil)
		require.Equal(t, http.StatusOK, p.status)
		require.NotContains(t, p.body, `/approve"`)
		require.NotContains(t, p.body, `/deny"`)
		require.Contains(t, p.body, c.why)

		// Posting the form anyway is refused by the approvals service.
		res := br.do(http.MethodPost, "/approvals/"+c.id.String()+"/approve", url.Values{"csrf_token": {csrfOf(t, p)}})
		require.Equal(t, http.StatusForbidden, res.status, c.user)
		a := b.approval(t, c.id)
		require.Equal(t, approvals.StatusPending, a.Status)
		require.Empty(t, a.Decisions)
	}
}

func TestDecideFormNeedsCSRFAndDenyNeedsReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	id := b.request(t, clerk, capability.PathBinding)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)

	res := br.do(http.MethodPost, "/approvals/"+id.String()+"/approve", url.Values{"reason": {"ok"}})
	require.Equal(t, http.StatusForbidden, res.status)
	require.Empty(t, b.approval(t, id).Decisions)

	p := br.do(http.MethodGet, "/approvals/"+id.String(), nil)
	res = br.do(http.MethodPost, "/approvals/"+id.String()+"/deny", url.Values{"csrf_token": {csrfOf(t, p)}, "reason": {"  "}})
	require.Equal(t, http.StatusUnprocessableEntity, res.status)
	require.Contains(t, res.body, "reason is required to deny")
	require.Equal(t, approvals.StatusPending, b.approval(t, id).Status)

	res = br.do(http.MethodPost, "/approvals/"+id.String()+"/deny", url.Values{"csrf_token": {csrfOf(t, p)}, "reason": {"wrong customer"}})
	require.Equal(t, http.StatusSeeOther, res.status)
	a := b.approval(t, id)
	require.Equal(t, approvals.StatusDenied, a.Status)
	require.Equal(t, "wrong customer", a.Decisions[0].Reason)

	// The inbox moves it from pending to recent decisions.
	p = br.do(http.MethodGet, "/inbox", nil)
	recent := p.body[strings.Index(p.body, `id="recent-h"`):]
	require.Contains(t, recent, id.String())
	require.Contains(t, p.body, "Nothing is waiting for a decision.")
	require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/approvals/not-a-uuid", nil).status)
	require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/approvals/"+uuid.NewString(), nil).status)
}

func TestSessionCookieOnV1NeedsCSRFHeaderToChangeState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	id := b.request(t, clerk, capability.PathREST)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)

	res := br.do(http.MethodPost, "/v1/approvals/"+id.String()+"/approve", url.Values{})
	require.Equal(t, http.StatusForbidden, res.status)
	require.Empty(t, b.approval(t, id).Decisions)
	// Reads need no token.
	require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/v1/approvals/"+id.String(), nil).status)
}

// A stricter approval policy returns an approved request to pending; its
// page says how many approvals it needs now and which policy asked.
func TestApprovalPageShowsARequirementRaisedByThePolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.user(t, "alice", identity.RoleApprover)
	b.user(t, "bob", identity.RoleApprover)
	admin := b.user(t, "ada", identity.RoleAdmin)
	id := b.request(t, b.user(t, "carl", identity.RoleClerk), capability.PathREST)
	ctx := context.Background()
	svc := b.h.App.Approvals()
	_, err := svc.Decide(ctx, alice.Principal(), capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)
	threshold := int64(10_000)
	_, err = svc.PolicySet(ctx, admin.Principal(), capability.PathREST,
		approvals.RuleInput{Capability: "issue-invoice", Currency: "EUR", MinAmount: &threshold, Approvers: 2}, etag.IfMatch{})
	require.NoError(t, err)

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("bob", testPassword).status)
	p := br.do(http.MethodGet, "/approvals/"+id.String(), nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "status-pending")
	require.Contains(t, p.body, "1 of 2 required")
	require.Contains(t, p.body, "approval policy version 2 asks more than the request was raised under (version 1: 1)")
}

// The inbox and the request page group amounts and give them their
// currency's digits: the row names the currency, the invoice's columns
// are numbers under "Amounts in USD".
func TestInboxShowsAmountsGroupedWithTheirCurrencysDigits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	b.user(t, "apu", identity.RoleApprover) // 16,237.50 needs a quorum of two
	clerk := b.user(t, "carl", identity.RoleClerk)
	invoiceID := uuid.Must(uuid.NewV7()).String()
	snap := json.RawMessage(`{"id":"` + invoiceID + `","status":"draft","number":null,"customer_id":"c1",
		"customer":{"id":"c1","name":"Initech Inc.","email":""},"currency":"USD","due_date":null,"memo":"",
		"lines":[{"description":"Audit","quantity":1,"unit_amount":1500000,"tax_rate_bps":825,"amount":1500000,"tax_amount":123750}],
		"subtotal":1500000,"tax_total":123750,"total":1623750,"version":1}`)
	id := b.requestFor(t, clerk, capability.PathREST, capability.Target{Type: "invoice", ID: invoiceID, Version: 1, Amount: 1623750, Currency: "USD", Snapshot: snap})

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	p := br.do(http.MethodGet, "/inbox", nil)
	require.Contains(t, p.body, ">16,237.50 USD<")
	p = br.do(http.MethodGet, "/approvals/"+id.String(), nil)
	for _, want := range []string{"<dd>16,237.50 USD</dd>", ">15,000.00<", ">1,237.50<", `id="total">16,237.50<`, "Amounts in USD"} {
		require.Contains(t, p.body, want)
	}
}

// The request page says what a windowed tier counted (ADR-0022 §3): the
// sum of the effects in its scope over its days, what it counted, and the
// request's own amount on top.
func TestApprovalPageShowsWhatAWindowCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "bob", identity.RoleApprover)
	admin := b.user(t, "ada", identity.RoleAdmin)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ctx := context.Background()
	threshold, days, scope := int64(1_000_000), 30, "customer"
	_, err := b.h.App.Approvals().PolicySet(ctx, admin.Principal(), capability.PathREST, approvals.RuleInput{Capability: "issue-invoice",
		Currency: "EUR", MinAmount: &threshold, Approvers: 2, WindowDays: &days, Scope: &scope}, etag.IfMatch{})
	require.NoError(t, err)
	customer := uuid.Must(uuid.NewV7())
	_, err = b.h.Pool.Exec(ctx, `INSERT INTO policy_effects (id, capability, requester, customer_id, amount, currency, at, target_type, target_id)
		VALUES (gen_random_uuid(), 'issue-invoice', $1, $2, 960000, 'EUR', now() - interval '1 day', 'invoice', 'earlier-invoice')`, clerk.ID, customer)
	require.NoError(t, err)
	invoiceID := uuid.Must(uuid.NewV7()).String()
	id := b.requestFor(t, clerk, capability.PathREST, capability.Target{Type: "invoice", ID: invoiceID, Version: 1, Amount: 60000,
		Currency: "EUR", CustomerID: customer, Snapshot: snapshotEUR(invoiceID)})

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("bob", testPassword).status)
	p := br.do(http.MethodGet, "/approvals/"+id.String(), nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "0 of 2 required")
	require.Contains(t, p.body, "Counted over 30 days")
	require.Contains(t, p.body, "9,600.00 EUR in 1 earlier issue-invoice call(s) for this customer")
	require.Contains(t, p.body, "plus this request's 600.00 EUR: 10,200.00 EUR")
	require.Contains(t, p.body, "<code>invoice:earlier-invoice</code>")
}
