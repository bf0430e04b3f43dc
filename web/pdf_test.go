package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/seller"
	"github.com/stretchr/testify/require"
)

// seller is who issues the documents of the tests that render them.
var nordlicht = seller.Details{LegalName: "Nordlicht GmbH",
	Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"}, VATID: "DE136308783"}

// setupSeller is setup with the seller configured.
func setupSeller(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{h: apptest.New(t, apptest.Options{})}
	invoicetest.Seller(context.Background(), t, b.h.Pool, nordlicht)
	return b
}

// The request page links to the draft's PDF as it will be issued, served
// behind the session; once the draft changes, the link goes and the old
// link is refused rather than showing another invoice than the one decided on.
func TestApprovalPageLinksToTheDraftsPDF(t *testing.T) {
	t.Parallel()
	b := setupSeller(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ag := b.agent(clerk, "conv-pdf")
	invoiceID, approvalID := ag.draftAndRequest(t, "Globex GmbH")
	link := "/invoices/" + invoiceID + "/pdf?version=1"

	br := b.browser(t)
	p := br.do(http.MethodGet, link, nil)
	require.Equal(t, http.StatusSeeOther, p.status, "no session: sign in first")
	require.Equal(t, "/login?next="+url.QueryEscape(link), p.header.Get("Location"))

	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	p = br.do(http.MethodGet, "/approvals/"+approvalID, nil)
	require.Contains(t, p.body, `<a href="`+"/invoices/"+invoiceID+"/pdf?version=1"+`" id="pdf-preview">PDF as it will be issued</a>`)

	p = br.do(http.MethodGet, link, nil)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, "application/pdf", p.header.Get("Content-Type"))
	require.Equal(t, "inline; filename=draft-"+invoiceID+".pdf", p.header.Get("Content-Disposition"))
	require.Empty(t, p.header.Get("Content-Security-Policy"), "the page CSP is for HTML")
	require.Equal(t, "nosniff", p.header.Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", p.header.Get("Cache-Control"))
	text := documenttest.Text(t, []byte(p.body))
	require.Contains(t, text, "Nordlicht GmbH\nHauptstraße 5\n10115 Berlin\n")
	require.Contains(t, text, "\nBill to\nGlobex GmbH\nMarktplatz 1\n80331 München\nGermany\nEmail: ap@globex.example\n")
	documenttest.RequireLines(t, text, "DRAFT — a preview as it will be issued; its number, issue date and seller are fixed on issue.",
		"Consulting, November 3 units 120.00 19 % 360.00", "Reference books 1 unit 25.50 7 % 25.50",
		"Subtotal 385.50 EUR", "VAT 70.18 EUR", "Total 455.68 EUR")

	_, err := ag.call(context.Background(), "update-draft-invoice", map[string]any{"invoice_id": invoiceID, "memo": "changed after the request"})
	require.NoError(t, err)
	p = br.do(http.MethodGet, "/approvals/"+approvalID, nil)
	require.NotContains(t, p.body, "pdf-preview", "a stale request has no preview")
	p = br.do(http.MethodGet, link, nil)
	require.Equal(t, http.StatusConflict, p.status)
	require.Contains(t, p.body, "the invoice has changed since this request was made (version 1 then, 2 now)")
	require.NotEmpty(t, p.header.Get("Content-Security-Policy"), "an error page keeps the page headers")
	require.Equal(t, http.StatusUnprocessableEntity, br.do(http.MethodGet, "/invoices/"+invoiceID+"/pdf?version=one", nil).status)

	// The invoice page links to the current document.
	p = br.do(http.MethodGet, "/invoices/"+invoiceID, nil)
	require.Contains(t, p.body, `href="/invoices/`+invoiceID+`/pdf"`)
	p = br.do(http.MethodGet, "/invoices/"+invoiceID+"/pdf", nil)
	require.Equal(t, http.StatusOK, p.status)
	documenttest.RequireLines(t, documenttest.Text(t, []byte(p.body)), "changed after the request")
}

func TestInvoicePDFPageWithoutSellerSaysHowToSetOne(t *testing.T) {
	t.Parallel()
	b := &bundle{h: apptest.New(t, apptest.Options{NoSeller: true})}
	clerk := b.user(t, "carl", identity.RoleClerk)
	inv := b.drafts(t, clerk, "Acme KK", 1)[0]
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("carl", testPassword).status)
	p := br.do(http.MethodGet, "/invoices/"+inv.ID.String()+"/pdf", nil)
	require.Equal(t, http.StatusServiceUnavailable, p.status)
	require.Contains(t, p.body, "invoiced seller set")
}

// The invoice page, the approval page and the PDF show a line's quantity
// and tax rate the same way, grouped as amounts are: 1234 is "1,234" on
// each. The PDF names the unit after the quantity, and in a zero-rated
// line's VAT column its category, Z, whose 0 % its VAT breakdown shows.
func TestInvoicePageAndPDFShowQuantitiesAlike(t *testing.T) {
	t.Parallel()
	b := setupSeller(t)
	// Over 10,000 EUR the default policy wants two approvers.
	b.user(t, "alice", identity.RoleApprover)
	b.user(t, "bob", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ag := b.agent(clerk, "c")
	ctx := context.Background()
	out, err := ag.call(ctx, "create-customer", map[string]any{"name": "Globex GmbH", "email": "ap@globex.example", "currency": "EUR",
		"address": invoicetest.CustomerAddress})
	require.NoError(t, err)
	out, err = ag.call(ctx, "create-draft-invoice", map[string]any{"customer_id": out.(*invoices.Customer).ID.String(), "lines": []map[string]any{
		{"description": "Hours", "quantity": 7, "unit_amount": 100, "tax_rate_bps": 825},
		{"description": "Bolts", "quantity": 1234, "unit_amount": 5, "tax_rate_bps": 1900},
		{"description": "Rivets", "quantity": 1234567, "unit_amount": 1, "tax_rate_bps": 0},
	}})
	require.NoError(t, err)
	id := out.(*invoices.Invoice).ID.String()
	_, err = ag.call(ctx, "issue-invoice", map[string]any{"invoice_id": id})
	pe, ok := problem.As(err)
	require.True(t, ok, "want APPROVAL_REQUIRED, got %v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code, pe.Detail)
	approvalID := pe.Extra["approval_id"].(string)
	approver := b.browser(t)
	require.Equal(t, http.StatusSeeOther, approver.signIn("alice", testPassword).status)
	request := approver.do(http.MethodGet, "/approvals/"+approvalID, nil)
	require.Equal(t, http.StatusOK, request.status)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("carl", testPassword).status)

	page := br.do(http.MethodGet, "/invoices/"+id, nil)
	require.Equal(t, http.StatusOK, page.status)
	pdf := br.do(http.MethodGet, "/invoices/"+id+"/pdf", nil)
	require.Equal(t, http.StatusOK, pdf.status)
	text := documenttest.Text(t, []byte(pdf.body))
	for _, l := range []struct {
		quantity                                                  int64
		desc, qty, unit, rate, category, pdfUnit, pdfRate, amount string
	}{
		{7, "Hours", "7", "1.00", "8.25 %", "Standard rated", "units", "8.25 %", "7.00"},
		{1234, "Bolts", "1,234", "0.05", "19 %", "Standard rated", "units", "19 %", "61.70"},
		{1234567, "Rivets", "1,234,567", "0.01", "0 %", "Zero rated", "units", "Z", "12,345.67"},
	} {
		require.Equal(t, l.qty, document.Quantity(quantity.Quantity(l.quantity)*quantity.One))
		row := "<tr><td>" + l.desc + `</td><td class="num">` + l.qty + `<br><span class="muted small">` + l.pdfUnit + `</span></td><td class="num">` +
			l.unit + `</td><td class="num">` + l.rate + "<br>"
		require.Contains(t, page.body, row)
		require.Contains(t, request.body, row)
		require.Contains(t, request.body, `<span class="muted small">`+l.category+`</span></td><td class="num">`+l.amount+`</td>`)
		documenttest.RequireLines(t, text, l.desc+" "+l.qty+" "+l.pdfUnit+" "+l.unit+" "+l.pdfRate+" "+l.amount)
	}
	documenttest.RequireLines(t, text, "Z Zero rated 0 % 12,345.67 0.00")
}

// An approver decides on what the invoice will say: the buyer's address
// and VAT id, the service period, the terms that will give its due date,
// the buyer's reference, each line's unit and VAT category, and the VAT
// breakdown with its exemption wording — the facts readiness requires.
func TestApprovalPageShowsTheLegalFacts(t *testing.T) {
	t.Parallel()
	b := setupSeller(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ag := b.agent(clerk, "c")
	ctx := context.Background()
	out, err := ag.call(ctx, "create-customer", map[string]any{"name": "Lumière SARL", "email": "ap@lumiere.example", "currency": "EUR",
		"vat_id": "FR40303265045", "payment_terms_days": 21, "buyer_reference": "BR-77",
		"address": map[string]any{"lines": []string{"12 rue de la Paix"}, "postcode": "75002", "city": "Paris", "country": "FR"}})
	require.NoError(t, err)
	out, err = ag.call(ctx, "create-draft-invoice", map[string]any{"customer_id": out.(*invoices.Customer).ID.String(),
		"service_period": map[string]any{"start": "2026-11-01", "end": "2026-11-30"},
		"lines": []map[string]any{
			{"description": "Beratung", "quantity": "7.5", "unit": "HUR", "unit_amount": 12000, "vat_category": "AE", "tax_rate_bps": 0},
		}})
	require.NoError(t, err)
	_, err = ag.call(ctx, "issue-invoice", map[string]any{"invoice_id": out.(*invoices.Invoice).ID.String()})
	pe, ok := problem.As(err)
	require.True(t, ok, "want APPROVAL_REQUIRED, got %v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code, pe.Detail)

	approver := b.browser(t)
	require.Equal(t, http.StatusSeeOther, approver.signIn("alice", testPassword).status)
	page := approver.do(http.MethodGet, "/approvals/"+pe.Extra["approval_id"].(string), nil)
	require.Equal(t, http.StatusOK, page.status)
	for _, want := range []string{
		`id="customer-address">12 rue de la Paix, 75002 Paris, France<`,
		`id="customer-vat-id">VAT ID FR40303265045<`,
		`id="service-period">2026-11-01 to 2026-11-30<`,
		`id="due">21 days after issue<`,
		`id="buyer-reference">BR-77<`,
		`<td class="num">7.5<br><span class="muted small">hours</span></td>`,
		`<span class="muted small">Reverse charge</span>`,
		`VAT Reverse charge 0 % on 900.00`,
	} {
		require.Contains(t, page.body, want)
	}
}
