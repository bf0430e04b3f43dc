package invoices_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/seller"
	"github.com/stretchr/testify/require"
)

// rebranded is the seller after the tests change it.
var rebranded = seller.Details{LegalName: "Polarlicht AG",
	Address: party.Address{Lines: []string{"Seestrasse 1"}, Postcode: "8002", City: "Zürich"}, TaxNumber: "CHE-123.456.789"}

const (
	sellerBlock    = "Nordlicht Consulting GmbH\nHauptstraße 5\n10115 Berlin\nGermany\nVAT ID: DE123456789\n"
	rebrandedBlock = "Polarlicht AG\nSeestrasse 1\n8002 Zürich\nTax number: CHE-123.456.789\n"
)

// get answers path as token on h, requiring status.
func get(t *testing.T, h *apptest.Harness, path, token string, status int) *apptest.Response {
	t.Helper()
	r := h.Do(t, http.MethodGet, path, token, nil)
	require.Equal(t, status, r.StatusCode, "%s: %s", path, r.Body)
	return r
}

// An issued invoice and its credit note name the seller as it was in
// their issuing statements. The seller changes: their documents stay the
// same bytes and the API says who issued them; a draft, and an invoice
// issued with no seller recorded (before migration 00040), show the
// seller as it is. With no seller at all the issued documents still
// render; the others are 503 saying how to set one.
func TestDocumentsNameTheSellerAsAtIssue(t *testing.T) {
	t.Parallel()
	pb := setupPDF(t, &nordlicht)
	b := httpBundle{ctx: pb.ctx, h: pb.h, clerk: pb.clerk, approver: pb.approver,
		customer: invoicetest.Customer(pb.ctx, t, pb.h.Pool, invoicetest.CustomerOpts{Name: "Acme GmbH", Currency: "EUR"})}
	frozen := &invoices.Seller{Details: nordlicht}
	frozen.BankAccounts = []party.BankAccount{}

	id := b.approvedIssue(t)
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var issued invoices.Invoice
	r.JSON(t, &issued)
	require.Equal(t, frozen, issued.Seller)
	cn := b.credit(t, id, map[string]any{"reason": "Goodwill", "amount": 1000})
	require.Equal(t, frozen, cn.Seller)
	legacy := issuedWithoutSeller(t, b)
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	var inv invoices.Invoice
	get(t, b.h, "/v1/invoices/"+draft.ID.String(), b.clerk, http.StatusOK).JSON(t, &inv)
	require.Nil(t, inv.Seller, "a draft has no seller of its own")

	invoicePDF, cnPDF := "/v1/invoices/"+id+"/pdf", "/v1/credit-notes/"+cn.ID.String()+"/pdf"
	before, beforeCN := get(t, b.h, invoicePDF, b.clerk, http.StatusOK), get(t, b.h, cnPDF, b.clerk, http.StatusOK)
	require.Contains(t, documenttest.Text(t, before.Body), sellerBlock)
	require.Contains(t, documenttest.Text(t, beforeCN.Body), sellerBlock)
	require.Contains(t, documenttest.Text(t, get(t, b.h, "/v1/invoices/"+legacy.ID.String()+"/pdf", b.clerk, http.StatusOK).Body), sellerBlock)

	invoicetest.Seller(b.ctx, t, b.h.Pool, rebranded)
	after := b.h
	for _, doc := range []struct{ path string }{{invoicePDF}, {cnPDF}} {
		r := get(t, after, doc.path, b.clerk, http.StatusOK)
		text := documenttest.Text(t, r.Body)
		require.Contains(t, text, sellerBlock, doc.path)
		require.NotContains(t, text, "Polarlicht", doc.path)
	}
	require.True(t, bytes.Equal(before.Body, get(t, after, invoicePDF, b.clerk, http.StatusOK).Body), "the issued invoice's document is the same bytes")
	require.True(t, bytes.Equal(beforeCN.Body, get(t, after, cnPDF, b.clerk, http.StatusOK).Body), "the credit note's document is the same bytes")
	get(t, after, "/v1/invoices/"+id, b.clerk, http.StatusOK).JSON(t, &inv)
	require.Equal(t, frozen, inv.Seller)
	var gotCN invoices.CreditNote
	get(t, after, "/v1/credit-notes/"+cn.ID.String(), b.clerk, http.StatusOK).JSON(t, &gotCN)
	require.Equal(t, frozen, gotCN.Seller)

	text := documenttest.Text(t, get(t, after, "/v1/invoices/"+draft.ID.String()+"/pdf", b.clerk, http.StatusOK).Body)
	require.Contains(t, text, rebrandedBlock, "a draft shows the settings as they are")
	documenttest.RequireLines(t, text, "DRAFT — a preview as it will be issued; its number, issue date and seller are fixed on issue.")
	require.Contains(t, documenttest.Text(t, get(t, after, "/v1/invoices/"+legacy.ID.String()+"/pdf", b.clerk, http.StatusOK).Body), rebrandedBlock,
		"an invoice with no seller recorded shows the settings as they are")
	get(t, after, "/v1/invoices/"+legacy.ID.String(), b.clerk, http.StatusOK).JSON(t, &inv)
	require.Nil(t, inv.Seller)

	_, err := b.h.Pool.Exec(b.ctx, `DELETE FROM seller`)
	require.NoError(t, err)
	unset := b.h
	require.True(t, bytes.Equal(before.Body, get(t, unset, invoicePDF, b.clerk, http.StatusOK).Body))
	require.True(t, bytes.Equal(beforeCN.Body, get(t, unset, cnPDF, b.clerk, http.StatusOK).Body))
	for _, path := range []string{"/v1/invoices/" + draft.ID.String() + "/pdf", "/v1/invoices/" + legacy.ID.String() + "/pdf"} {
		p := requireProblem(t, unset.Do(t, http.MethodGet, path, b.clerk, nil), http.StatusServiceUnavailable, invoices.CodeSellerNotConfigured)
		require.Contains(t, p["detail"], "invoiced seller set")
	}
}

// While no seller is set, issue-invoice refuses a draft (a legal invoice
// names its seller). An invoice issued all the same, in the store as
// those before issue readiness were, and its credit note record none;
// their documents name the seller once one is set.
func TestIssuedWithoutSellerRecordsNone(t *testing.T) {
	t.Parallel()
	pb := setupPDF(t, nil)
	b := httpBundle{ctx: pb.ctx, h: pb.h, clerk: pb.clerk, approver: pb.approver,
		customer: invoicetest.Customer(pb.ctx, t, pb.h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})}
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	id := draft.ID.String()
	p := requireProblem(t, b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil),
		http.StatusUnprocessableEntity, invoices.CodeInvoiceIncomplete)
	requireField(t, p, "seller")
	issued := invoicetest.Issue(b.ctx, t, b.h.Pool, draft.ID)
	require.Nil(t, issued.Seller)
	cn := b.credit(t, id, map[string]any{"reason": "Goodwill", "amount": 1000})
	require.Nil(t, cn.Seller)
	requireProblem(t, b.h.Do(t, http.MethodGet, "/v1/invoices/"+id+"/pdf", b.clerk, nil), http.StatusServiceUnavailable, invoices.CodeSellerNotConfigured)

	invoicetest.Seller(b.ctx, t, b.h.Pool, rebranded)
	configured := b.h
	require.Contains(t, documenttest.Text(t, get(t, configured, "/v1/invoices/"+id+"/pdf", b.clerk, http.StatusOK).Body), rebrandedBlock)
	require.Contains(t, documenttest.Text(t, get(t, configured, "/v1/credit-notes/"+cn.ID.String()+"/pdf", b.clerk, http.StatusOK).Body), rebrandedBlock)
}

// The seller an issued invoice or credit note records is frozen in SQL
// too, whatever writes; a draft records none, and a recorded seller has a
// name.
func TestRecordedSellerIsFrozenInSQL(t *testing.T) {
	t.Parallel()
	pb := setupPDF(t, &nordlicht)
	b := httpBundle{ctx: pb.ctx, h: pb.h, clerk: pb.clerk, approver: pb.approver,
		customer: invoicetest.Customer(pb.ctx, t, pb.h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})}
	id := b.approvedIssue(t)
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil).StatusCode)
	cn := b.credit(t, id, map[string]any{"reason": "Goodwill", "amount": 1000})
	legacy := issuedWithoutSeller(t, b)
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})

	mallory := `{"name": "Mallory Ltd", "address": "", "tax_id": ""}`
	for _, tc := range []struct {
		name, sql string
		args      []any
		err       string
	}{
		{"rewrite an issued invoice's", `UPDATE invoices SET seller = $1 WHERE id = $2`, []any{mallory, id}, "its content is frozen"},
		{"clear an issued invoice's", `UPDATE invoices SET seller = NULL WHERE id = $1`, []any{id}, "its content is frozen"},
		{"record one on an invoice issued without", `UPDATE invoices SET seller = $1 WHERE id = $2`, []any{mallory, legacy.ID}, "its content is frozen"},
		{"rewrite a credit note's", `UPDATE credit_notes SET seller = $1 WHERE id = $2`, []any{mallory, cn.ID}, "credit notes are frozen once issued"},
		{"give a draft one", `UPDATE invoices SET seller = $1 WHERE id = $2`, []any{mallory, draft.ID}, "invoices_seller"},
		{"issue one without a name", `
			INSERT INTO invoices (id, customer_id, status, number, currency, subtotal, tax_total, total, issued_at, bill_to, seller, created_at, updated_at)
			VALUES (gen_random_uuid(), $1, 'issued', 'INV-T-1', 'EUR', 100, 0, 100, now(), '{"name": "Acme GmbH", "email": ""}',
				'{"name": "", "address": "", "tax_id": ""}', now(), now())`, []any{b.customer.ID}, "invoices_seller"},
	} {
		_, err := b.h.Pool.Exec(b.ctx, tc.sql, tc.args...)
		require.ErrorContains(t, err, tc.err, tc.name)
	}
	var sellers []string
	rows, err := b.h.Pool.Query(b.ctx, `SELECT coalesce(seller ->> 'legal_name', '-') FROM invoices WHERE id = ANY($1) ORDER BY created_at`,
		[]string{id, legacy.ID.String(), draft.ID.String()})
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		sellers = append(sellers, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{nordlicht.LegalName, "-", "-"}, sellers, "nothing changed")
	var cnSeller string
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT seller ->> 'legal_name' FROM credit_notes WHERE id = $1`, cn.ID).Scan(&cnSeller))
	require.Equal(t, nordlicht.LegalName, cnSeller)
}

// issuedWithoutSeller is an invoice issued while no seller was set, as
// before migration 00040; the seller is set again afterwards.
func issuedWithoutSeller(t *testing.T, b httpBundle) *invoices.Invoice {
	t.Helper()
	was, err := invoices.CurrentSeller(b.ctx, b.h.Pool)
	require.NoError(t, err)
	_, err = b.h.Pool.Exec(b.ctx, `DELETE FROM seller`)
	require.NoError(t, err)
	inv := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	require.Nil(t, inv.Seller)
	invoicetest.Seller(b.ctx, t, b.h.Pool, was.Details)
	return inv
}
