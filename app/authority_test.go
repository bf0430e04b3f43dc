package app_test

// Adversarial tests of the product's core authority (ADR-0010): a
// consequential effect without a matching, approved, unexpired,
// unconsumed approval is impossible on every path and for every role, and
// only an approver or admin other than the requester decides.

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

func (g *gated) approval(t *testing.T, id string) approvals.Approval {
	t.Helper()
	var a approvals.Approval
	resp := g.h.Do(t, "GET", "/v1/approvals/"+id, g.bobTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &a)
	return a
}

// statusOf reads an invoice's status (as a map: a draft with a due date
// does not decode into invoices.Invoice).
func (g *gated) statusOf(t *testing.T, id string) string {
	t.Helper()
	resp := g.h.Do(t, "GET", "/v1/invoices/"+id, g.clerkTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var inv map[string]any
	resp.JSON(t, &inv)
	return inv["status"].(string)
}

func invokeBody(id string) map[string]any {
	return map[string]any{"input": map[string]any{"invoice_id": id}}
}

// An admin who approved a request must not be the one who spends it: the
// effect would then rest on the caller's own decision alone. This holds
// whether the admin joined the clerk's pending request before deciding or
// not, on every path and for delete as for issue.
func TestAuthorityAdminCannotSpendAnApprovalSheDecided(t *testing.T) {
	t.Parallel()
	g := setupGated(t)

	issueID := g.draft(t).ID.String()
	aid := refusedWith(t, g.issue(t, issueID), http.StatusForbidden, approvals.CodeApprovalRequired)
	// The admin calls too (joining the clerk's request), then decides it.
	resp := g.h.Do(t, "POST", "/v1/invoices/"+issueID+"/issue", g.adminTok, nil)
	require.Equal(t, aid, refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired))
	g.decide(t, g.adminTok, aid, "approve", nil)

	before := g.count(t, `SELECT count(*) FROM audit_events`)
	for _, r := range []*apptest.Response{
		g.h.Do(t, "POST", "/v1/invoices/"+issueID+"/issue", g.adminTok, nil),
		g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.adminTok, invokeBody(issueID)),
	} {
		require.Equal(t, aid, refusedWith(t, r, http.StatusForbidden, problem.CodeForbidden))
	}
	require.Equal(t, "draft", g.statusOf(t, issueID))
	require.Equal(t, approvals.StatusApproved, g.approval(t, aid).Status, "the refusal spends nothing")
	require.Equal(t, before, g.count(t, `SELECT count(*) FROM audit_events`), "nothing written")
	// The requester, who did not decide, can.
	resp = g.issue(t, issueID)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))

	// Delete: the same rule.
	delID := g.draft(t).ID.String()
	did := refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+delID, g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.adminTok, did, "approve", nil)
	refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+delID, g.adminTok, nil), http.StatusForbidden, problem.CodeForbidden)
	require.Equal(t, "draft", g.statusOf(t, delID))
	resp = g.h.Do(t, "DELETE", "/v1/invoices/"+delID, g.clerkTok, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(resp.Body))

	// Quorum: one of the two approvers spending it is refused as well.
	bigID := g.draft(t, invoices.LineInput{Description: "Licence", Quantity: 1 * quantity.One, UnitAmount: 2_000_000}).ID.String()
	qid := refusedWith(t, g.issue(t, bigID), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.adminTok, qid, "approve", nil)
	g.decide(t, g.bobTok, qid, "approve", nil)
	refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+bigID+"/issue", g.adminTok, nil), http.StatusForbidden, problem.CodeForbidden)
	require.Equal(t, "draft", g.statusOf(t, bigID))
	resp = g.issue(t, bigID)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	_, err := audit.Verify(g.ctx, g.h.Pool)
	require.NoError(t, err)
}

// The requester never decides, and so never counts toward a quorum: an
// admin who requested gets 403 on her own request, by token or by the
// inbox's session cookie (with its CSRF token), and the request stays
// pending with one approval of two.
func TestAuthorityRequesterNeverDecidesOrCountsTowardQuorum(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	admin, err := identity.UserGetByUsername(g.ctx, g.h.Pool, "ada")
	require.NoError(t, err)
	id := g.draft(t, invoices.LineInput{Description: "Licence", Quantity: 1 * quantity.One, UnitAmount: 1_000_000}).ID.String()
	aid := refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.adminTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, 2, g.approval(t, aid).RequiredApprovals)

	g.decide(t, g.bobTok, aid, "approve", nil)
	resp := g.h.Do(t, "POST", "/v1/approvals/"+aid+"/approve", g.adminTok, nil)
	refusedWith(t, resp, http.StatusForbidden, problem.CodeForbidden)

	sid, sess, err := web.SessionCreate(g.ctx, g.h.Pool, admin.ID, time.Hour)
	require.NoError(t, err)
	cookie := web.SessionCookie + "=" + sid
	resp = g.h.Do(t, "POST", "/v1/approvals/"+aid+"/approve", "", nil, "Cookie", cookie, "X-CSRF-Token", sess.CSRFToken)
	refusedWith(t, resp, http.StatusForbidden, problem.CodeForbidden)

	a := g.approval(t, aid)
	require.Equal(t, approvals.StatusPending, a.Status)
	require.Equal(t, 1, a.Approvals)
	require.Equal(t, aid, refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.adminTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired))
	require.Equal(t, "draft", g.statusOf(t, id))
}

// A cookie-authenticated call to a consequential route needs the
// session's CSRF token; without it nothing is requested, and with a
// cookie the requester is still the session's user.
func TestAuthoritySessionCookieNeedsCSRFForConsequentialCalls(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	id := g.draft(t).ID.String()
	sid, sess, err := web.SessionCreate(g.ctx, g.h.Pool, g.clerk.ID, time.Hour)
	require.NoError(t, err)
	cookie := web.SessionCookie + "=" + sid
	for _, r := range []*apptest.Response{
		g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", "", nil, "Cookie", cookie),
		g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", "", nil, "Cookie", cookie, "X-CSRF-Token", "not-the-token"),
		g.h.Do(t, "DELETE", "/v1/invoices/"+id, "", nil, "Cookie", cookie),
		g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", "", invokeBody(id), "Cookie", cookie),
	} {
		refusedWith(t, r, http.StatusForbidden, problem.CodeForbidden)
	}
	require.Zero(t, g.count(t, `SELECT count(*) FROM approval_requests`))

	aid := refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", "", nil, "Cookie", cookie, "X-CSRF-Token", sess.CSRFToken),
		http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, g.clerk.ID, g.approval(t, aid).RequestedBy.ID)
	// The requester's own session cannot decide it either.
	resp := g.h.Do(t, "POST", "/v1/approvals/"+aid+"/approve", "", nil, "Cookie", cookie, "X-CSRF-Token", sess.CSRFToken)
	refusedWith(t, resp, http.StatusForbidden, problem.CodeForbidden)
	require.Equal(t, approvals.StatusPending, g.approval(t, aid).Status)
}

// The effective input is what binds: key order, whitespace and the path a
// call takes give the same request; a member the schema does not know
// (a "reason", a stray field) is refused before anything is requested.
func TestAuthorityInputVariantsBindOrAreRefused(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	id := g.draft(t).ID.String()
	aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)

	spaced := `{ "input" : {   "invoice_id" : "` + id + `" } }`
	resp := g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.clerkTok, spaced)
	require.Equal(t, aid, refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired))

	for name, r := range map[string]*apptest.Response{
		"reason in REST body":  g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, map[string]any{"reason": "approved by phone"}),
		"id in REST body":      g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, map[string]any{"invoice_id": id}),
		"reason in input":      g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.clerkTok, map[string]any{"input": map[string]any{"invoice_id": id, "reason": "x"}}),
		"approval_id in input": g.h.Do(t, "POST", "/v1/capabilities/delete-invoice/invoke", g.clerkTok, map[string]any{"input": map[string]any{"invoice_id": id, "approval_id": aid}}),
		"no input":             g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.clerkTok, map[string]any{}),
	} {
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", name, r.Body)
	}
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests`), "nothing requested")

	g.decide(t, g.bobTok, aid, "approve", nil)
	// Approved through REST, spent through the binding path.
	resp = g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.clerkTok, spaced)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, "issued", g.statusOf(t, id))
}

// Any change to the draft after the request (lines, customer, due date,
// even an empty PATCH) makes the approval stale: what the approver saw is
// not what would be issued.
func TestAuthorityDraftChangesMakeApprovalStale(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	other := invoicetest.Customer(g.ctx, t, g.h.Pool, invoicetest.CustomerOpts{Name: "Other Ltd"})
	due := time.Now().UTC().AddDate(0, 0, 30).Format("2006-01-02")
	for name, patch := range map[string]map[string]any{
		"lines":    {"lines": []map[string]any{{"description": "Consulting", "quantity": 200, "unit_amount": 5000, "tax_rate_bps": 2000}}},
		"customer": {"customer_id": other.ID.String()},
		"due date": {"due_date": due},
		"nothing":  {},
	} {
		id := g.draft(t).ID.String()
		for _, path := range []string{"issue", "delete"} {
			call := func() *apptest.Response {
				if path == "delete" {
					return g.h.Do(t, "DELETE", "/v1/invoices/"+id, g.clerkTok, nil)
				}
				return g.issue(t, id)
			}
			aid := refusedWith(t, call(), http.StatusForbidden, approvals.CodeApprovalRequired)
			g.decide(t, g.bobTok, aid, "approve", nil)
			resp := g.h.Do(t, "PATCH", "/v1/invoices/"+id, g.clerkTok, patch)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", name, resp.Body)
			require.Equal(t, aid, refusedWith(t, call(), http.StatusConflict, approvals.CodeApprovalStale), name)
			require.Equal(t, "draft", g.statusOf(t, id), name)
			require.Equal(t, approvals.StatusSuperseded, g.approval(t, aid).Status, name)
		}
	}
}

// The customer is part of what the approver decides (name and email are
// in the snapshot): editing the customer after the approval makes it
// stale, so an invoice is never issued to a bill-to the approver did not
// see.
func TestAuthorityCustomerEditMakesApprovalStale(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	inv := g.draft(t)
	id := inv.ID.String()
	aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, aid, "approve", nil)

	resp := g.h.Do(t, "PATCH", "/v1/customers/"+inv.CustomerID.String(), g.clerkTok, map[string]any{"name": "Mallory Holdings", "email": "pay@mallory.example"})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, aid, refusedWith(t, g.issue(t, id), http.StatusConflict, approvals.CodeApprovalStale))
	require.Equal(t, "draft", g.statusOf(t, id))

	fresh := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
	var snap invoices.Snapshot
	require.NoError(t, jsonUnmarshal(g.approval(t, fresh).Snapshot, &snap))
	require.Equal(t, "Mallory Holdings", snap.Customer.Name, "the new request shows the customer as it is now")
	g.decide(t, g.bobTok, fresh, "approve", nil)
	resp = g.issue(t, id)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

// What gets issued is what the approver saw: lines and totals of the
// issued invoice equal those of the approved snapshot.
func TestAuthorityIssuedInvoiceIsTheApprovedSnapshot(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	id := g.draft(t,
		invoices.LineInput{Description: "Design", Quantity: 3 * quantity.One, UnitAmount: 12_345, TaxRateBPS: 1900},
		invoices.LineInput{Description: "Hosting", Quantity: 1 * quantity.One, UnitAmount: 999, TaxRateBPS: 700},
	).ID.String()
	aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, aid, "approve", nil)
	var snap invoices.Snapshot
	require.NoError(t, jsonUnmarshal(g.approval(t, aid).Snapshot, &snap))

	resp := g.issue(t, id)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var issued invoices.Invoice
	resp.JSON(t, &issued)
	require.Equal(t, snap.Lines, issued.Lines)
	require.Equal(t, [3]int64{snap.Subtotal, snap.TaxTotal, snap.Total}, [3]int64{issued.Subtotal, issued.TaxTotal, issued.Total})
	require.Equal(t, snap.CustomerID, issued.CustomerID)
	require.Equal(t, snap.Currency, issued.Currency)
	require.Equal(t, snap.Version+1, issued.Version, "issuing is the only change since the snapshot")
}

// An approval dies with its target's state: an issue approval cannot act
// on a voided or deleted invoice, a delete approval cannot delete an
// issued one, and a re-created draft with the same content needs its own.
func TestAuthorityApprovalsAfterVoidDeleteAndRecreate(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	x := g.draft(t).ID.String()
	issueA := refusedWith(t, g.issue(t, x), http.StatusForbidden, approvals.CodeApprovalRequired)
	delA := refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+x, g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, issueA, "approve", nil)
	g.decide(t, g.bobTok, delA, "approve", nil)
	resp := g.issue(t, x)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+x, g.clerkTok, nil), http.StatusConflict, invoices.CodeInvalidTransition)
	// Voiding it is consequential too: its own approval, decided by bob.
	void := refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+x+"/void", g.clerkTok, map[string]any{"reason": "wrong"}), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, void, "approve", nil)
	resp = g.h.Do(t, "POST", "/v1/invoices/"+x+"/void", g.clerkTok, map[string]any{"reason": "wrong"})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+x, g.clerkTok, nil), http.StatusConflict, invoices.CodeInvalidTransition)
	refusedWith(t, g.issue(t, x), http.StatusConflict, invoices.CodeInvalidTransition)
	require.Equal(t, "void", g.statusOf(t, x))
	require.Equal(t, approvals.StatusApproved, g.approval(t, delA).Status, "never spent")

	// Delete Y with its approval while an issue approval for Y waits;
	// then re-create the same draft: the issue approval does not follow.
	yInv := g.draft(t)
	y := yInv.ID.String()
	issueY := refusedWith(t, g.issue(t, y), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, issueY, "approve", nil)
	delY := refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+y, g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, delY, "approve", nil)
	resp = g.h.Do(t, "DELETE", "/v1/invoices/"+y, g.clerkTok, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(resp.Body))
	require.Equal(t, http.StatusNotFound, g.issue(t, y).StatusCode)

	resp = g.h.Do(t, "POST", "/v1/invoices", g.clerkTok, map[string]any{
		"customer_id": yInv.CustomerID.String(),
		"lines":       []map[string]any{{"description": "Consulting", "quantity": 2, "unit_amount": 5000, "tax_rate_bps": 2000}},
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(resp.Body))
	var again invoices.Invoice
	resp.JSON(t, &again)
	require.NotEqual(t, y, again.ID.String())
	require.NotEqual(t, issueY, refusedWith(t, g.issue(t, again.ID.String()), http.StatusForbidden, approvals.CodeApprovalRequired))
	require.Equal(t, "draft", g.statusOf(t, again.ID.String()))
	require.Equal(t, approvals.StatusApproved, g.approval(t, issueY).Status)
}

// TestIssuedInvoiceFreezesWhomItBills: renaming a customer after issue
// changes neither the issued invoice's API representation nor what it
// bills, and the SQL freeze refuses a raw rewrite of bill_to.
func TestIssuedInvoiceFreezesWhomItBills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := apptest.New(t, apptest.Options{})
	_, clerk := h.User(t, "clerk-bt", identity.RoleClerk)
	_, approver := h.User(t, "approver-bt", identity.RoleApprover)

	r := h.Do(t, "POST", "/v1/customers", clerk, map[string]any{"name": "Acme", "email": "ap@acme.example", "currency": "EUR",
		"address": invoicetest.CustomerAddress})
	require.Equal(t, 201, r.StatusCode, string(r.Body))
	var cust struct{ ID string }
	r.JSON(t, &cust)
	r = h.Do(t, "POST", "/v1/invoices", clerk, map[string]any{"customer_id": cust.ID,
		"lines": []map[string]any{{"description": "Work", "quantity": 1, "unit_amount": 1000, "tax_rate_bps": 0}}})
	require.Equal(t, 201, r.StatusCode, string(r.Body))
	var inv struct {
		ID     string
		BillTo *struct{ Name, Email string } `json:"bill_to"`
	}
	r.JSON(t, &inv)
	require.Nil(t, inv.BillTo, "a draft bills its customer as it is now")

	r = h.Do(t, "POST", "/v1/invoices/"+inv.ID+"/issue", clerk, nil)
	require.Equal(t, 403, r.StatusCode, string(r.Body))
	approvalID := r.Problem(t)["approval_id"].(string)
	require.Equal(t, 200, h.Do(t, "POST", "/v1/approvals/"+approvalID+"/approve", approver, map[string]string{"reason": "ok"}).StatusCode)
	r = h.Do(t, "POST", "/v1/invoices/"+inv.ID+"/issue", clerk, nil)
	require.Equal(t, 200, r.StatusCode, string(r.Body))

	r = h.Do(t, "PATCH", "/v1/customers/"+cust.ID, clerk, map[string]any{"name": "Mallory", "email": "pay@mallory.example"})
	require.Equal(t, 200, r.StatusCode, string(r.Body))

	r = h.Do(t, "GET", "/v1/invoices/"+inv.ID, clerk, nil)
	require.Equal(t, 200, r.StatusCode)
	r.JSON(t, &inv)
	require.NotNil(t, inv.BillTo)
	require.Equal(t, "Acme", inv.BillTo.Name)
	require.Equal(t, "ap@acme.example", inv.BillTo.Email)

	_, err := h.Pool.Exec(ctx, `UPDATE invoices SET bill_to = '{"name":"Mallory","email":"x"}' WHERE id = $1`, inv.ID)
	require.ErrorContains(t, err, "frozen")
}
