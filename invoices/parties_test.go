package invoices_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// A customer carries what an invoice must say of its buyer, and an issued
// invoice freezes it whole, with its supply period and references; the
// payment terms give the due date from the issue date.
func TestBuyerAndTermsAreFrozenAtIssue(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.clerk, map[string]any{
		"name": "Nordlicht GmbH", "currency": "EUR", "vat_id": "de 136 695 976", "language": "de", "payment_terms_days": 14,
		"buyer_reference": "04011000-12345-67",
		"address":         map[string]any{"lines": []string{"Hauptstraße 5", "Hinterhaus"}, "postcode": "10115", "city": "Berlin", "country": "de"},
	})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var c invoices.Customer
	r.JSON(t, &c)
	require.Equal(t, "DE136695976", string(c.VATID), "the compact form")
	require.Equal(t, "DE", string(c.Address.Country))
	require.Equal(t, []string{"Hauptstraße 5", "Hinterhaus"}, c.Address.Lines)
	require.Equal(t, 14, *c.PaymentTermsDays)

	r = b.h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, map[string]any{
		"customer_id": c.ID, "service_period": map[string]any{"start": "2026-11-01", "end": "2026-11-30"},
		"purchase_order": "PO-4711",
		"lines":          []any{map[string]any{"description": "Beratung", "quantity": "7.5", "unit": "HUR", "unit_amount": 12000, "tax_rate_bps": 1900}},
	})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var draft invoices.Invoice
	r.JSON(t, &draft)
	require.Nil(t, draft.DueDate, "a draft's due date follows from its terms on issue")
	require.Equal(t, "2026-11-30", draft.ServicePeriod.End.String())

	id := draft.ID.String()
	p := requireProblem(t, b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	b.approve(t, p["approval_id"].(string))
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var issued invoices.Invoice
	r.JSON(t, &issued)
	today := time.Now().UTC()
	require.Equal(t, today.AddDate(0, 0, 14).Format(time.DateOnly), issued.DueDate.String(), "issue date + the customer's 14 days")
	require.Equal(t, 14, *issued.PaymentTermsDays)
	require.Equal(t, "PO-4711", issued.PurchaseOrder)
	require.Equal(t, "04011000-12345-67", issued.BuyerReference, "the draft named none: the customer's, frozen")
	require.Equal(t, invoices.BillTo{Name: "Nordlicht GmbH", Address: c.Address, VATID: c.VATID, Language: "de", EInvoiceFormat: einvoice.None},
		*issued.BillTo, "the e-invoice format as at issue too")

	// Changing the customer later changes nothing issued.
	r = b.h.Do(t, http.MethodPatch, "/v1/customers/"+c.ID.String(), b.clerk, map[string]any{"vat_id": "", "address": map[string]any{"city": "Hamburg", "country": "DE"}})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodGet, "/v1/invoices/"+id, b.clerk, nil)
	var again invoices.Invoice
	r.JSON(t, &again)
	require.Equal(t, *issued.BillTo, *again.BillTo)
	r = b.h.Do(t, http.MethodPatch, "/v1/customers/"+c.ID.String(), b.clerk, map[string]any{"buyer_reference": "991-00000-00"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodGet, "/v1/invoices/"+id, b.clerk, nil)
	r.JSON(t, &again)
	require.Equal(t, "04011000-12345-67", again.BuyerReference)
}

// Issuing judges readiness on the customer and the seller and then
// freezes them, in one transaction that holds both rows: a change of
// either that is in flight is waited for, and the issue judges what it
// committed — here a customer whose address is being removed is no
// longer one an invoice can be issued to, though the draft was approved.
func TestIssueWaitsForAChangeOfWhomItBillsAndJudgesTheResult(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	ctx := context.Background()
	d := invoicetest.Draft(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	id := d.ID.String()
	p := requireProblem(t, b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	b.approve(t, p["approval_id"].(string))

	change, err := b.h.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = change.Rollback(ctx) }()
	_, err = change.Exec(ctx, `UPDATE customers SET address = '{"lines": [], "postcode": "", "city": "", "subdivision": "", "country": ""}' WHERE id = $1`, b.customer.ID)
	require.NoError(t, err)

	done := make(chan *apptest.Response, 1)
	go func() { done <- b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil) }()
	select {
	case r := <-done:
		t.Fatalf("the issue did not wait for the customer's change in flight: %d %s", r.StatusCode, r.Body)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, change.Commit(ctx))
	r := <-done
	p = requireProblem(t, r, http.StatusUnprocessableEntity, invoices.CodeInvoiceIncomplete)
	require.Contains(t, fmt.Sprint(p["errors"]), "customer.address")
	var status string
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT status FROM invoices WHERE id = $1`, d.ID).Scan(&status))
	require.Equal(t, "draft", status)
}
