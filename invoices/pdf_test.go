package invoices_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/seller"
	"github.com/stretchr/testify/require"
)

var nordlicht = seller.Details{LegalName: "Nordlicht Consulting GmbH",
	Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"}, VATID: "DE123456789"}

// customerBlock is what a document says under the name of a factory
// customer: its address and email.
const customerBlock = "Marktplatz 1\n80331 München\nGermany\nEmail: billing@example.com\n"

// longDate is t's day as an English document writes it.
func longDate(t time.Time) string { return t.UTC().Format("2 January 2006") }

type pdfBundle struct {
	ctx      context.Context
	h        *apptest.Harness
	clerk    string
	approver string
}

// setupPDF serves invoicing with s as the seller, or none when s is nil.
func setupPDF(t *testing.T, s *seller.Details) pdfBundle {
	t.Helper()
	h := apptest.New(t, apptest.Options{NoSeller: true})
	if s != nil {
		invoicetest.Seller(context.Background(), t, h.Pool, *s)
	}
	_, clerk := h.User(t, "clerk1", identity.RoleClerk)
	_, approver := h.User(t, "approver1", identity.RoleApprover)
	return pdfBundle{ctx: context.Background(), h: h, clerk: clerk, approver: approver}
}

// pdf gets an invoice's PDF as token and reads it back as text.
func (b pdfBundle) pdf(t *testing.T, id, token string) (*apptest.Response, string) {
	t.Helper()
	r := b.h.Do(t, http.MethodGet, "/v1/invoices/"+id+"/pdf", token, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, "application/pdf", r.Header.Get("Content-Type"))
	return r, documenttest.Text(t, r.Body)
}

// An issued invoice's PDF, through the API, for each of the names the
// embedded font must draw: the number, whom it bills, each line and the
// totals read back, and the same bytes every time.
func TestInvoicePDFForUnicodeNames(t *testing.T) {
	t.Parallel()
	b := setupPDF(t, &nordlicht)
	lines := []invoices.LineInput{
		{Description: "Beratung für Müller & Søn", Quantity: 80 * quantity.One, UnitAmount: 15000, TaxRateBPS: 1900},
		{Description: "Warsztat w Łodzi (Łódź)", Quantity: 1 * quantity.One, UnitAmount: 150000, TaxRateBPS: 1900},
		{Description: "Ταξίδι στην Αθήνα", Quantity: 2 * quantity.One, UnitAmount: 45000, TaxRateBPS: 700},
		{Description: "Лицензия, Москва", Quantity: 1 * quantity.One, UnitAmount: 25950},
	}
	for _, name := range []string{"Müller & Søn", "Łódź", "Αθήνα", "Москва"} {
		t.Run(name, func(t *testing.T) {
			cu := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: name, Currency: "EUR"})
			inv := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &cu.ID, Lines: lines})
			r, text := b.pdf(t, inv.ID.String(), b.approver)
			require.Contains(t, text, "\nBill to\n"+name+"\n"+customerBlock)
			documenttest.RequireLines(t, text, "Invoice", "Number "+*inv.Number, "Issue date "+longDate(*inv.IssuedAt),
				"Beratung für Müller & Søn 80 units 150.00 19 % 12,000.00",
				"Warsztat w Łodzi (Łódź) 1 unit 1,500.00 19 % 1,500.00",
				"Ταξίδι στην Αθήνα 2 units 450.00 7 % 900.00",
				"Лицензия, Москва 1 unit 259.50 Z 259.50",
				"Subtotal 14,659.50 EUR", "VAT 2,628.00 EUR", "Total 17,287.50 EUR", "Balance due 17,287.50 EUR")
			require.Contains(t, text, sellerBlock)
			require.NotContains(t, text, "DRAFT")
			require.Equal(t, `inline; filename=`+*inv.Number+`.pdf`, r.Header.Get("Content-Disposition"))

			again := b.h.Do(t, http.MethodGet, "/v1/invoices/"+inv.ID.String()+"/pdf", b.clerk, nil)
			require.True(t, bytes.Equal(r.Body, again.Body), "the same invoice renders to the same bytes")
			require.Equal(t, r.Header.Get("ETag"), again.Header.Get("ETag"))
		})
	}
}

// A draft renders marked DRAFT, billing its customer as they are now; once
// issued it bills whom it billed then, whatever the customer becomes. A
// client holding the current bytes gets a 304.
func TestInvoicePDFFromDraftToPaid(t *testing.T) {
	t.Parallel()
	b := setupPDF(t, &nordlicht)
	cu := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Αθήνα Α.Ε.", Currency: "JPY"})
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &cu.ID, Currency: "JPY",
		Lines: []invoices.LineInput{{Description: "Tea", Quantity: 4 * quantity.One, UnitAmount: 1018, TaxRateBPS: 0}}})
	id := draft.ID.String()

	r, text := b.pdf(t, id, b.clerk)
	require.Equal(t, `inline; filename=draft-`+id+`.pdf`, r.Header.Get("Content-Disposition"))
	documenttest.RequireLines(t, text, "DRAFT — a preview as it will be issued; its number, issue date and seller are fixed on issue.",
		"Number assigned on issue", "Tea 4 units 1,018 Z 4,072", "Total 4,072 JPY", "Invoice (draft) · page 1/1")
	require.Contains(t, text, "\nBill to\nΑθήνα Α.Ε.\n")
	etag := r.Header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}"$`, etag)
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		nm := b.h.Do(t, http.MethodGet, "/v1/invoices/"+id+"/pdf", b.clerk, nil, "If-None-Match", inm)
		require.Equal(t, http.StatusNotModified, nm.StatusCode, inm)
		require.Empty(t, nm.Body)
	}

	// Issued: a number, no mark; renaming the customer leaves it billing
	// whom it billed.
	invoicetest.Issue(b.ctx, t, b.h.Pool, draft.ID)
	upd := b.h.Do(t, http.MethodPatch, "/v1/customers/"+cu.ID.String(), b.clerk, map[string]any{"name": "Renamed KK"})
	require.Equal(t, http.StatusOK, upd.StatusCode, "%s", upd.Body)
	r, text = b.pdf(t, id, b.clerk)
	require.NotEqual(t, etag, r.Header.Get("ETag"))
	require.NotContains(t, text, "DRAFT")
	require.NotContains(t, text, "Renamed KK")
	require.Contains(t, text, "\nBill to\nΑθήνα Α.Ε.\n")
	documenttest.RequireLines(t, text, "Balance due 4,072 JPY")
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodGet, "/v1/invoices/"+id+"/pdf", b.clerk, nil, "If-None-Match", etag).StatusCode)

	mp := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/mark-paid", b.clerk, nil)
	require.Equal(t, http.StatusOK, mp.StatusCode, "%s", mp.Body)
	var paid invoices.Invoice
	mp.JSON(t, &paid)
	_, text = b.pdf(t, id, b.clerk)
	documenttest.RequireLines(t, text, "Paid 4,072 JPY", "Balance due 0 JPY", longDate(*paid.PaidAt)+" Paid in full 4,072 JPY")
}

func TestInvoicePDFRefusals(t *testing.T) {
	t.Parallel()
	b := setupPDF(t, &nordlicht)
	inv := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{})
	for _, path := range []string{"/v1/invoices/0193a4c2-0000-7000-8000-000000000001/pdf", "/v1/invoices/not-a-uuid/pdf"} {
		requireProblem(t, b.h.Do(t, http.MethodGet, path, b.clerk, nil), http.StatusNotFound, "NOT_FOUND")
	}
	requireProblem(t, b.h.Do(t, http.MethodGet, "/v1/invoices/"+inv.ID.String()+"/pdf", "", nil), http.StatusUnauthorized, "UNAUTHENTICATED")

	// Without the seller's name a document cannot say who issued it.
	nb := setupPDF(t, nil)
	unsold := invoicetest.Draft(nb.ctx, t, nb.h.Pool, invoicetest.DraftOpts{})
	p := requireProblem(t, nb.h.Do(t, http.MethodGet, "/v1/invoices/"+unsold.ID.String()+"/pdf", nb.clerk, nil), http.StatusServiceUnavailable, invoices.CodeSellerNotConfigured)
	require.Contains(t, p["detail"], "invoiced seller set")
}

// Text above U+FFFF (an emoji) in a customer's name, a line's
// description, a memo, a credit note's reason or the seller's settings
// draws as U+FFFD on the documents, draft, issued and credit note alike,
// instead of failing the render (a 500).
func TestPDFDrawsTextOutsideTheBMPAsReplacement(t *testing.T) {
	t.Parallel()
	pb := setupPDF(t, &seller.Details{LegalName: "Rocket 🚀 GmbH",
		Address: party.Address{Lines: []string{"Orbit 🛰 1"}, Postcode: "10115", City: "Berlin", Country: "DE"}, TaxNumber: "DE🚀42"})
	r := pb.h.Do(t, http.MethodPost, "/v1/customers", pb.clerk, map[string]any{"name": "Café 🚀 Ltd", "email": "ap@cafe.example", "currency": "EUR",
		"address": map[string]any{"lines": []string{"1 Place du Marché"}, "postcode": "75001", "city": "Paris", "country": "FR"}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var cu invoices.Customer
	r.JSON(t, &cu)
	r = pb.h.Do(t, http.MethodPost, "/v1/invoices", pb.clerk, map[string]any{"customer_id": cu.ID, "memo": "Thanks 🙏",
		"lines": []map[string]any{{"description": "Launch 🚀 service", "quantity": 2, "unit_amount": 5000, "tax_rate_bps": 1900}}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var inv invoices.Invoice
	r.JSON(t, &inv)
	id := inv.ID.String()
	seen := func(text string) {
		t.Helper()
		require.Contains(t, text, "Rocket \uFFFD GmbH\nOrbit \uFFFD 1\n10115 Berlin\nGermany\nTax number: DE\uFFFD42\n")
		require.Contains(t, text, "\nBill to\nCafé \uFFFD Ltd\n1 Place du Marché\n75001 Paris\nFrance\nEmail: ap@cafe.example\n")
		require.NotContains(t, text, "🚀")
	}
	_, text := pb.pdf(t, id, pb.clerk)
	seen(text)
	documenttest.RequireLines(t, text, "Launch \uFFFD service 2 units 50.00 19 % 100.00", "Thanks \uFFFD")

	b := httpBundle{ctx: pb.ctx, h: pb.h, clerk: pb.clerk, approver: pb.approver}
	p := requireProblem(t, pb.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", pb.clerk, nil), http.StatusForbidden, "APPROVAL_REQUIRED")
	b.approve(t, p["approval_id"].(string))
	r = pb.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", pb.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	_, text = pb.pdf(t, id, pb.clerk)
	seen(text)
	documenttest.RequireLines(t, text, "Launch \uFFFD service 2 units 50.00 19 % 100.00", "Thanks \uFFFD", "Total 119.00 EUR")

	cn := b.credit(t, id, map[string]any{"reason": "Scrubbed 🚀 launch", "lines": []any{map[string]any{"position": 0, "quantity": 1}}})
	r = pb.h.Do(t, http.MethodGet, "/v1/credit-notes/"+cn.ID.String()+"/pdf", pb.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	text = documenttest.Text(t, r.Body)
	seen(text)
	documenttest.RequireLines(t, text, "Launch \uFFFD service 1 unit 50.00 19 % 50.00")
	require.Contains(t, text, "\nReason\nScrubbed \uFFFD launch\n")
}

// The PDF of an issued EUR invoice carries the EPC QR code for what is
// still owed: after a payment of 20.00 on 120.00, the code a banking app
// reads asks for 100.00 to the seller's account, quoting the number.
func TestIssuedInvoicePDFAsksForTheBalanceByQRCode(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	ctx := context.Background()
	inv := invoicetest.Issued(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}) // 120.00 EUR
	id := inv.ID.String()
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/payments", b.clerk, map[string]any{
		"amount": 2000, "received_on": time.Now().UTC().Format(time.DateOnly), "method": "bank_transfer"})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodGet, "/v1/invoices/"+id+"/pdf", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	codes := documenttest.QRCodes(t, r.Body)
	require.Len(t, codes, 1)
	acct := invoicetest.DefaultSeller.BankAccounts[0]
	require.Equal(t, strings.Join([]string{"BCD", "002", "1", "SCT", string(acct.BIC), invoicetest.DefaultSeller.LegalName,
		string(acct.IBAN), "EUR100.00", "", "", *inv.Number}, "\n"), codes[0])
}
