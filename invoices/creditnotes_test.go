package invoices_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

// approve has the approver approve request id.
func (b httpBundle) approve(t *testing.T, id string) {
	t.Helper()
	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+id+"/approve", b.approver, map[string]any{"reason": "checked"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
}

// approved makes a governed call as the clerk, which answers 403
// APPROVAL_REQUIRED; has the approver approve the request; and makes the
// call again, answering its response.
func (b httpBundle) approved(t *testing.T, method, path string, body any) *apptest.Response {
	t.Helper()
	p := requireProblem(t, b.h.Do(t, method, path, b.clerk, body), http.StatusForbidden, approvals.CodeApprovalRequired)
	b.approve(t, p["approval_id"].(string))
	return b.h.Do(t, method, path, b.clerk, body)
}

// credit asks for a credit note on invoice id as the clerk, has the
// approver approve the request, and asks again: the issued credit note.
func (b httpBundle) credit(t *testing.T, id string, body map[string]any) invoices.CreditNote {
	t.Helper()
	path := "/v1/invoices/" + id + "/credit-notes"
	p := requireProblem(t, b.h.Do(t, http.MethodPost, path, b.clerk, body), http.StatusForbidden, approvals.CodeApprovalRequired)
	b.approve(t, p["approval_id"].(string))
	r := b.h.Do(t, http.MethodPost, path, b.clerk, body)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var cn invoices.CreditNote
	r.JSON(t, &cn)
	require.Equal(t, "/v1/credit-notes/"+cn.ID.String(), r.Header.Get("Location"))
	return cn
}

// threeRates is an invoice of 430.48 EUR over three tax rates.
func threeRates(b httpBundle, t *testing.T) *invoices.Invoice {
	return invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID, Lines: []invoices.LineInput{
		{Description: "Consulting", Quantity: 3 * quantity.One, UnitAmount: 10000, TaxRateBPS: 1900}, // 300.00 + 57.00
		{Description: "Books", Quantity: 1 * quantity.One, UnitAmount: 5000, TaxRateBPS: 700},        // 50.00 + 3.50
		{Description: "Postage", Quantity: 2 * quantity.One, UnitAmount: 999, TaxRateBPS: 0},         // 19.98
	}})
}

func line0(cn invoices.CreditNote) invoices.Line { return cn.Lines[0].Line }

// By line and quantity, in parts that take exactly the line's tax, then
// by amount split over the invoice's rates half-even; numbered in their
// own gapless series; a credit of the whole balance settles the invoice.
func TestCreditNotesByLineAndByAmount(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	inv := threeRates(b, t)
	id := inv.ID.String()
	require.EqualValues(t, 43048, inv.Total)
	year := time.Now().UTC().Year()

	cn1 := b.credit(t, id, map[string]any{"reason": "one day not worked", "lines": []any{map[string]any{"position": 0, "quantity": 1}}})
	require.Equal(t, fmt.Sprintf("CN-%d-000001", year), cn1.Number)
	require.Equal(t, *inv.Number, cn1.InvoiceNumber)
	require.Equal(t, invoices.Line{Description: "Consulting", Quantity: 1 * quantity.One, Unit: "C62", UnitAmount: 10000, VATCategory: vat.Standard, TaxRateBPS: 1900, Amount: 10000, TaxAmount: 1900}, line0(cn1))
	require.Equal(t, 0, *cn1.Lines[0].InvoiceLine)
	require.EqualValues(t, 11900, cn1.Total)
	require.EqualValues(t, 11900, cn1.Invoice.AmountCredited)
	require.EqualValues(t, 31148, cn1.Invoice.BalanceDue)
	require.Equal(t, "Acme GmbH", cn1.BillTo.Name)

	cn2 := b.credit(t, id, map[string]any{"reason": "the other two days", "lines": []any{map[string]any{"position": 0, "quantity": 2}}})
	require.Equal(t, fmt.Sprintf("CN-%d-000002", year), cn2.Number)
	require.EqualValues(t, 3800, line0(cn2).TaxAmount, "the line's 57.00 of tax in all")

	// 10.00 over 0 %, 7 % and 19 % in proportion to each rate's gross
	// (19.98, 53.50, 357.00 of 430.48): 0.46, 1.25, 8.29.
	cn3 := b.credit(t, id, map[string]any{"reason": "goodwill", "amount": 1000})
	require.Equal(t, fmt.Sprintf("CN-%d-000003", year), cn3.Number)
	require.Len(t, cn3.Lines, 3)
	for i, want := range []struct{ rate, net, tax int64 }{{0, 46, 0}, {700, 117, 8}, {1900, 697, 132}} {
		l := cn3.Lines[i]
		require.Nil(t, l.InvoiceLine)
		require.Equal(t, want.rate, l.TaxRateBPS)
		require.Equal(t, want.net, l.Amount, "rate %d", want.rate)
		require.Equal(t, want.tax, l.TaxAmount, "rate %d", want.rate)
	}
	require.EqualValues(t, 1000, cn3.Total)
	require.EqualValues(t, 6348, cn3.Invoice.BalanceDue)

	// The rest of the balance: nothing is owed, so the invoice is paid.
	cn4 := b.credit(t, id, map[string]any{"reason": "settled", "amount": 6348})
	require.Equal(t, invoices.StatusPaid, cn4.Invoice.Status)
	require.EqualValues(t, 0, cn4.Invoice.BalanceDue)
	require.EqualValues(t, 43048, cn4.Invoice.AmountCredited)

	var got invoices.CreditNote
	r := b.h.Do(t, http.MethodGet, "/v1/credit-notes/"+cn3.ID.String(), b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &got)
	require.Equal(t, cn3.Lines, got.Lines)
	require.Nil(t, got.Invoice)
	var list struct {
		Data    []invoices.CreditNote
		HasMore bool `json:"has_more"`
		Next    *string
	}
	r = b.h.Do(t, http.MethodGet, "/v1/invoices/"+id+"/credit-notes?limit=3", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &list)
	require.Len(t, list.Data, 3)
	require.True(t, list.HasMore)
	require.Equal(t, cn1.Number, list.Data[0].Number)
	require.Len(t, list.Data[0].Lines, 1)
	_, err := audit.Verify(b.ctx, b.h.Pool)
	require.NoError(t, err)
	var events int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_events WHERE type = 'credit_note.issued'`).Scan(&events))
	require.Equal(t, 4, events)
}

// Each bad credit is a 4xx problem naming the field (or the invoice's
// status) before any approval is asked for: nothing is written.
func TestCreditNoteBadInput(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	inv := threeRates(b, t)
	issued := inv.ID.String()
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	void := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	require.Equal(t, http.StatusOK, b.approved(t, http.MethodPost, "/v1/invoices/"+void+"/void", nil).StatusCode)
	paid := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodPost, "/v1/invoices/"+paid+"/mark-paid", b.clerk, nil).StatusCode)
	// 300.00 of the 430.48 paid: 130.48 left to credit.
	b.pay(t, issued, 30000)
	lines := func(ls ...[2]int) map[string]any {
		out := []any{}
		for _, l := range ls {
			out = append(out, map[string]any{"position": l[0], "quantity": l[1]})
		}
		return map[string]any{"reason": "wrong", "lines": out}
	}
	amount := func(a any) map[string]any { return map[string]any{"reason": "wrong", "amount": a} }
	for _, tc := range []struct {
		name, invoice string
		body          map[string]any
		status        int
		code, field   string
	}{
		{"zero amount", issued, amount(0), 422, "VALIDATION_FAILED", "amount"},
		{"negative amount", issued, amount(-100), 422, "VALIDATION_FAILED", "amount"},
		{"over the remaining balance", issued, amount(13049), 422, "VALIDATION_FAILED", "amount"},
		{"lines over the remaining balance", issued, lines([2]int{0, 2}), 422, "VALIDATION_FAILED", "lines"},
		{"another currency", issued, map[string]any{"reason": "wrong", "amount": 100, "currency": "GBP"}, 422, "VALIDATION_FAILED", "currency"},
		{"lines and amount", issued, map[string]any{"reason": "wrong", "amount": 100, "lines": []any{map[string]any{"position": 0, "quantity": 1}}}, 422, "VALIDATION_FAILED", "amount"},
		{"neither lines nor amount", issued, map[string]any{"reason": "wrong"}, 422, "VALIDATION_FAILED", "amount"},
		{"no lines", issued, map[string]any{"reason": "wrong", "lines": []any{}}, 422, "VALIDATION_FAILED", "lines"},
		{"no such line", issued, lines([2]int{3, 1}), 422, "VALIDATION_FAILED", "lines.0.position"},
		{"a line twice", issued, lines([2]int{2, 1}, [2]int{2, 1}), 422, "VALIDATION_FAILED", "lines.1.position"},
		{"more than the line", issued, lines([2]int{2, 3}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"zero quantity", issued, lines([2]int{2, 0}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"no reason", issued, map[string]any{"amount": 100}, 422, "VALIDATION_FAILED", ""},
		{"blank reason", issued, map[string]any{"reason": "\u200b", "amount": 100}, 422, "VALIDATION_FAILED", "reason"},
		{"on a draft", draft, amount(100), 409, invoices.CodeInvalidTransition, ""},
		{"on a void invoice", void, amount(100), 409, invoices.CodeInvalidTransition, ""},
		{"on a paid invoice", paid, amount(100), 409, invoices.CodeInvalidTransition, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.settled(t, tc.invoice)
			r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+tc.invoice+"/credit-notes", b.clerk, tc.body)
			p := requireProblem(t, r, tc.status, tc.code)
			if tc.field != "" {
				requireField(t, p, tc.field)
			}
			require.Equal(t, before, b.settled(t, tc.invoice))
		})
	}
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+issued+"/credit-notes", b.clerk, amount(13049))
	require.EqualValues(t, 13048, requireProblem(t, r, http.StatusUnprocessableEntity, "VALIDATION_FAILED")["balance_due"])
	// What is left of a line, and of the balance, can still be credited.
	b.credit(t, issued, lines([2]int{2, 2}))
}

// The credit-note gate on REST and on the contextual binding: the same
// request on both paths; the approver sees what is credited; the
// requester never approves; a change of the invoice makes an approval
// stale; an approval is spent once.
func TestCreditNoteGate(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	inv := threeRates(b, t)
	id := inv.ID.String()
	body := map[string]any{"reason": "goodwill", "amount": 2500}
	rest := func(token string, body any) *apptest.Response {
		return b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/credit-notes", token, body)
	}
	invoke := func(token string, body map[string]any) *apptest.Response {
		in := map[string]any{"invoice_id": id}
		for k, v := range body {
			in[k] = v
		}
		return b.h.Do(t, http.MethodPost, "/v1/capabilities/issue-credit-note/invoke", token, map[string]any{"input": in})
	}
	first := requireProblem(t, rest(b.clerk, body), http.StatusForbidden, approvals.CodeApprovalRequired)["approval_id"].(string)
	require.Equal(t, first, requireProblem(t, invoke(b.clerk, body), http.StatusForbidden, approvals.CodeApprovalRequired)["approval_id"])
	// Another credit is another request: the input hash binds the amount.
	other := requireProblem(t, rest(b.clerk, map[string]any{"reason": "goodwill", "amount": 2501}), http.StatusForbidden, approvals.CodeApprovalRequired)["approval_id"]
	require.NotEqual(t, first, other)

	var a approvals.Approval
	b.h.Do(t, http.MethodGet, "/v1/approvals/"+first, b.approver, nil).JSON(t, &a)
	require.Equal(t, "issue-credit-note", a.Capability)
	require.EqualValues(t, 2500, a.Amount)
	var snap invoices.CreditSnapshot
	require.NoError(t, json.Unmarshal(a.Snapshot, &snap))
	require.Equal(t, inv.Total, snap.Total)
	require.Equal(t, "Acme GmbH", snap.Customer.Name)
	require.EqualValues(t, 2500, snap.CreditNote.Total)
	require.Equal(t, "CN", snap.CreditNote.Series)
	require.EqualValues(t, 43048-2500, snap.CreditNote.BalanceDueAfter)
	require.Len(t, snap.CreditNote.Lines, 3)

	// The requester never decides: an admin's own request waits for someone else.
	own := requireProblem(t, rest(b.admin, map[string]any{"reason": "admin's", "amount": 100}), http.StatusForbidden, approvals.CodeApprovalRequired)["approval_id"].(string)
	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+own+"/approve", b.admin, nil)
	requireProblem(t, r, http.StatusForbidden, "FORBIDDEN")

	// Approved, then the invoice changes (a payment): stale, nothing credited.
	b.approve(t, first)
	b.pay(t, id, 100)
	before := b.settled(t, id)
	requireProblem(t, invoke(b.clerk, body), http.StatusConflict, approvals.CodeApprovalStale)
	after := b.settled(t, id)
	require.Equal(t, before.creditNotes, after.creditNotes)
	require.Equal(t, before.credited, after.credited)

	// Asked anew for the invoice as it is now, approved, issued once on
	// the binding path; the same call again asks for a new approval.
	again := requireProblem(t, invoke(b.clerk, body), http.StatusForbidden, approvals.CodeApprovalRequired)["approval_id"].(string)
	require.NotEqual(t, first, again)
	b.approve(t, again)
	r = invoke(b.clerk, body)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var out struct{ Output invoices.CreditNote }
	r.JSON(t, &out)
	require.EqualValues(t, 2500, out.Output.Total)
	require.Equal(t, uuid.MustParse(again), *out.Output.ApprovalID)
	third := requireProblem(t, rest(b.clerk, body), http.StatusForbidden, approvals.CodeApprovalRequired)["approval_id"]
	require.NotEqual(t, again, third)
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(*) FROM credit_notes WHERE invoice_id = $1`, id).Scan(&n))
	require.Equal(t, 1, n)
	b.h.Do(t, http.MethodGet, "/v1/approvals/"+again, b.approver, nil).JSON(t, &a)
	require.Equal(t, approvals.StatusConsumed, a.Status)

	// A credit as large as an invoice that needs two approvers needs two.
	big := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID,
		Lines: []invoices.LineInput{{Description: "Fit-out", Quantity: 1 * quantity.One, UnitAmount: 2_000_000}}})
	p := requireProblem(t, b.h.Do(t, http.MethodPost, "/v1/invoices/"+big.ID.String()+"/credit-notes", b.clerk,
		map[string]any{"reason": "defects", "amount": 1_000_000}), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.EqualValues(t, 2, p["required_approvals"])

	// The policy takes credit notes as it takes any consequential call: a
	// euro tier of its own replaces the seed for euros.
	r = b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", b.admin,
		map[string]any{"capability": "issue-credit-note", "currency": "EUR", "min_amount": 100, "approvers": 2})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	p = requireProblem(t, rest(b.clerk, map[string]any{"reason": "small", "amount": 150}), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.EqualValues(t, 2, p["required_approvals"])
}
