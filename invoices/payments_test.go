package invoices_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// settled is what a refused settlement must leave untouched.
type settled struct {
	payments, creditNotes, approvals, audit int
	paid, credited, version                 int64
	status                                  string
}

func (b httpBundle) settled(t *testing.T, id string) settled {
	t.Helper()
	var s settled
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT
		(SELECT count(*) FROM payments), (SELECT count(*) FROM credit_notes), (SELECT count(*) FROM approval_requests),
		(SELECT count(*) FROM audit_events), amount_paid, amount_credited, version, status
		FROM invoices WHERE id = $1`, id).
		Scan(&s.payments, &s.creditNotes, &s.approvals, &s.audit, &s.paid, &s.credited, &s.version, &s.status))
	return s
}

func (b httpBundle) pay(t *testing.T, id string, amount int64) invoices.Payment {
	t.Helper()
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/payments", b.clerk, map[string]any{
		"amount": amount, "received_on": time.Now().UTC().Format(time.DateOnly), "method": "bank_transfer", "reference": "SEPA 4711"})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var p invoices.Payment
	r.JSON(t, &p)
	return p
}

// Partial payments settle an invoice; a reversal reopens it; void is only
// for an invoice nothing was paid on; mark-paid pays the balance.
func TestPaymentsSettleAndReverse(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	inv := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}) // 120.00 EUR
	id := inv.ID.String()

	p1 := b.pay(t, id, 5000)
	require.Equal(t, invoices.PaymentReceived, p1.Status)
	require.Equal(t, "EUR", p1.Currency)
	require.Equal(t, "SEPA 4711", p1.Reference)
	require.Equal(t, invoices.StatusIssued, p1.Invoice.Status)
	require.EqualValues(t, 5000, p1.Invoice.AmountPaid)
	require.EqualValues(t, 7000, p1.Invoice.BalanceDue)

	// Void is for an invoice nothing was paid on: the error says to credit it.
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/void", b.clerk, nil)
	p := requireProblem(t, r, http.StatusConflict, invoices.CodeInvalidTransition)
	require.Contains(t, p["detail"], "issue-credit-note")
	require.Contains(t, p["detail"], "70.00 EUR")

	p2 := b.pay(t, id, 7000)
	require.Equal(t, invoices.StatusPaid, p2.Invoice.Status)
	require.EqualValues(t, 0, p2.Invoice.BalanceDue)
	require.NotNil(t, p2.Invoice.PaidAt)

	// The second payment bounced: the invoice owes it again.
	r = b.h.Do(t, http.MethodPost, "/v1/payments/"+p2.ID.String()+"/reverse", b.clerk, map[string]any{"reason": "returned by the bank"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, `"2"`, r.Header.Get("ETag"))
	var rev invoices.Payment
	r.JSON(t, &rev)
	require.Equal(t, invoices.PaymentReversed, rev.Status)
	require.Equal(t, "returned by the bank", *rev.ReversalReason)
	require.Equal(t, invoices.StatusIssued, rev.Invoice.Status)
	require.Nil(t, rev.Invoice.PaidAt)
	require.EqualValues(t, 5000, rev.Invoice.AmountPaid)
	require.EqualValues(t, 7000, rev.Invoice.BalanceDue)
	// Once is all.
	before := b.settled(t, id)
	r = b.h.Do(t, http.MethodPost, "/v1/payments/"+p2.ID.String()+"/reverse", b.clerk, map[string]any{"reason": "again"})
	requireProblem(t, r, http.StatusConflict, invoices.CodeInvalidTransition)
	require.Equal(t, before, b.settled(t, id))

	// mark-paid records a payment of the balance.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/mark-paid", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var paid invoices.Invoice
	r.JSON(t, &paid)
	require.Equal(t, invoices.StatusPaid, paid.Status)
	require.EqualValues(t, 12000, paid.AmountPaid)

	var list struct{ Data []invoices.Payment }
	r = b.h.Do(t, http.MethodGet, "/v1/invoices/"+id+"/payments", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &list)
	require.Len(t, list.Data, 3)
	require.Equal(t, []int64{5000, 7000, 7000}, []int64{list.Data[0].Amount, list.Data[1].Amount, list.Data[2].Amount})
	require.Equal(t, invoices.PaymentReversed, list.Data[1].Status)
	require.Equal(t, "Paid in full", list.Data[2].Reference)
	_, err := audit.Verify(b.ctx, b.h.Pool)
	require.NoError(t, err)
}

// Each bad payment is a 4xx problem naming the field (or the invoice's
// status), and nothing is written.
func TestPaymentBadInput(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	issued := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	void := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	r := b.approved(t, http.MethodPost, "/v1/invoices/"+void+"/void", nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	today := time.Now().UTC()
	pay := func(extra map[string]any) map[string]any {
		m := map[string]any{"amount": 1000, "received_on": today.Format(time.DateOnly), "method": "card"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name, invoice string
		body          any
		status        int
		code, field   string
	}{
		{"negative amount", issued, pay(map[string]any{"amount": -5}), 422, "VALIDATION_FAILED", "amount"},
		{"zero amount", issued, pay(map[string]any{"amount": 0}), 422, "VALIDATION_FAILED", "amount"},
		{"fractional amount", issued, pay(map[string]any{"amount": 10.5}), 422, "VALIDATION_FAILED", "amount"},
		{"another currency", issued, pay(map[string]any{"currency": "USD"}), 422, "VALIDATION_FAILED", "currency"},
		{"received two days ahead", issued, pay(map[string]any{"received_on": today.AddDate(0, 0, 2).Format(time.DateOnly)}), 422, "VALIDATION_FAILED", "received_on"},
		{"received_on not a date", issued, pay(map[string]any{"received_on": "yesterday"}), 422, "VALIDATION_FAILED", "received_on"},
		{"over the balance", issued, pay(map[string]any{"amount": 12001}), 422, "VALIDATION_FAILED", "amount"},
		{"unknown method", issued, pay(map[string]any{"method": "cheque"}), 422, "VALIDATION_FAILED", "method"},
		{"blank reference", issued, pay(map[string]any{"reference": " "}), 422, "VALIDATION_FAILED", "reference"},
		{"no amount", issued, map[string]any{"received_on": today.Format(time.DateOnly), "method": "cash"}, 422, "VALIDATION_FAILED", ""},
		{"on a draft", draft, pay(nil), 409, invoices.CodeInvalidTransition, ""},
		{"on a void invoice", void, pay(nil), 409, invoices.CodeInvalidTransition, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.settled(t, tc.invoice)
			r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+tc.invoice+"/payments", b.clerk, tc.body)
			p := requireProblem(t, r, tc.status, tc.code)
			if tc.field != "" {
				requireField(t, p, tc.field)
			}
			require.Equal(t, before, b.settled(t, tc.invoice))
		})
	}
	// A day ahead is a payer in another time zone: recorded.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+issued+"/payments", b.clerk, pay(map[string]any{"received_on": today.AddDate(0, 0, 1).Format(time.DateOnly), "currency": "EUR"}))
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	// Over the balance says what it is.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+issued+"/payments", b.clerk, pay(map[string]any{"amount": 11001}))
	p := requireProblem(t, r, http.StatusUnprocessableEntity, "VALIDATION_FAILED")
	require.EqualValues(t, 11000, p["balance_due"])
	require.Contains(t, string(r.Body), "110.00 EUR")
	// An approver decides approvals; it records no payments.
	before := b.settled(t, issued)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+issued+"/payments", b.approver, pay(nil))
	requireProblem(t, r, http.StatusForbidden, "FORBIDDEN")
	require.Equal(t, before, b.settled(t, issued))
}

// 32 concurrent partial payments whose sum exceeds the balance: exactly
// the ones that fit succeed, and the balance never goes below zero.
func TestConcurrentPaymentsNeverOverpay(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	id := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String() // 12,000
	const n, amount = 32, 700                                                                                   // 22,400 asked; 17 fit
	var (
		wg            sync.WaitGroup
		start         = make(chan struct{})
		ok, overspent atomic.Int64
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/payments", b.clerk, map[string]any{
				"amount": amount, "received_on": time.Now().UTC().Format(time.DateOnly), "method": "cash"})
			switch r.StatusCode {
			case http.StatusCreated:
				var p invoices.Payment
				r.JSON(t, &p)
				if p.Invoice.BalanceDue < 0 {
					t.Errorf("balance went negative: %d", p.Invoice.BalanceDue)
				}
				ok.Add(1)
			case http.StatusUnprocessableEntity:
				overspent.Add(1)
			default:
				t.Errorf("unexpected %d: %s", r.StatusCode, r.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 12000/amount, ok.Load())
	require.EqualValues(t, n-12000/amount, overspent.Load())
	got, err := invoices.InvoiceGetByID(b.ctx, b.h.Pool, uuid.MustParse(id))
	require.NoError(t, err)
	require.EqualValues(t, 12000/amount*amount, got.AmountPaid)
	require.EqualValues(t, 12000%amount, got.BalanceDue)
	require.Equal(t, invoices.StatusIssued, got.Status)
	var sum int64
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT coalesce(sum(amount), 0) FROM payments WHERE invoice_id = $1`, id).Scan(&sum))
	require.Equal(t, got.AmountPaid, sum)
}
