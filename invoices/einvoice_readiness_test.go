package invoices_test

import (
	"maps"
	"net/http"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/seller"
	"github.com/stretchr/testify/require"
)

// Each rule a customer's e-invoice format adds to issue readiness, alone:
// issuing is 422 INVOICE_INCOMPLETE naming the field and code (and the
// rule in its message), before any approval is asked for, writing
// nothing. A draft that meets its customer's format issues, and its
// e-invoice is served in that format by default.
func TestIssueRefusesADraftItsCustomersEInvoiceFormatCannotState(t *testing.T) {
	t.Parallel()
	b := readinessBundle{setupHTTP(t)}
	full := einvoiceSeller()
	with := func(change func(*seller.Details)) *seller.Details {
		d := full
		d.Contact, d.Address.Lines = full.Contact, append([]string(nil), full.Address.Lines...)
		change(&d)
		return &d
	}
	customer := func(format einvoice.Format, set map[string]any) map[string]any {
		c := client(map[string]any{"einvoice_format": format, "buyer_reference": "04011000-12345-67", "peppol_id": "9957:FR04409414364"})
		for k, v := range set {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	draft := map[string]any{"lines": []any{vatLine("S")}, "supply_date": "2026-03-02", "payment_terms_days": 14}
	without := func(k string) map[string]any {
		d := maps.Clone(draft)
		delete(d, k)
		return d
	}
	noPostcode := map[string]any{"lines": []string{"12 rue de Rivoli"}, "city": "Paris", "country": "FR"}

	refused := []struct {
		readinessCase
		rule string
	}{
		{readinessCase{name: "XRechnung without a buyer reference", seller: &full, customer: customer(einvoice.XRechnungUBL, map[string]any{"buyer_reference": nil}),
			draft: draft, field: "buyer_reference", code: invoices.MissingBuyerReference}, "BR-DE-15"},
		{readinessCase{name: "XRechnung, seller without a contact point", seller: with(func(d *seller.Details) { d.Contact.Name = "" }),
			customer: customer(einvoice.XRechnungCII, nil), draft: draft, field: "seller.contact.name", code: invoices.MissingSellerContact}, "BR-DE-5"},
		{readinessCase{name: "XRechnung, seller without a telephone number", seller: with(func(d *seller.Details) { d.Contact.Phone = "" }),
			customer: customer(einvoice.XRechnungCII, nil), draft: draft, field: "seller.contact.phone", code: invoices.MissingSellerContact}, "BR-DE-6"},
		{readinessCase{name: "XRechnung, seller without a contact email", seller: with(func(d *seller.Details) { d.Contact.Email = "" }),
			customer: customer(einvoice.XRechnungUBL, nil), draft: draft, field: "seller.contact.email", code: invoices.MissingSellerContact}, "BR-DE-7"},
		{readinessCase{name: "XRechnung, seller without a bank account", seller: with(func(d *seller.Details) { d.BankAccounts = nil }),
			customer: customer(einvoice.XRechnungUBL, nil), draft: draft, field: "seller.bank_accounts", code: invoices.MissingPaymentMeans}, "BR-DE-1"},
		{readinessCase{name: "XRechnung, seller without a postcode", seller: with(func(d *seller.Details) { d.Address.Postcode = "" }),
			customer: customer(einvoice.XRechnungUBL, nil), draft: draft, field: "seller.address.postcode", code: invoices.MissingSellerPostcode}, "BR-DE-4"},
		{readinessCase{name: "XRechnung, customer without a postcode", seller: &full, customer: customer(einvoice.XRechnungCII, map[string]any{"address": noPostcode}),
			draft: draft, field: "customer.address.postcode", code: invoices.MissingBuyerPostcode}, "BR-DE-9"},
		{readinessCase{name: "XRechnung, customer without an electronic address", seller: &full,
			customer: customer(einvoice.XRechnungCII, map[string]any{"email": nil, "peppol_id": nil}),
			draft:    draft, field: "customer.email", code: invoices.MissingBuyerElectronicAddress}, "BT-49"},
		{readinessCase{name: "Peppol without the customer's participant id", seller: &full, customer: customer(einvoice.Peppol, map[string]any{"peppol_id": nil}),
			draft: draft, field: "customer.peppol_id", code: invoices.MissingPeppolID}, "PEPPOL-EN16931-R010"},
		{readinessCase{name: "Peppol without a buyer reference or purchase order", seller: &full, customer: customer(einvoice.Peppol, map[string]any{"buyer_reference": nil}),
			draft: draft, field: "buyer_reference", code: invoices.MissingBuyerReference}, "PEPPOL-EN16931-R003"},
		{readinessCase{name: "Peppol, seller without an electronic address",
			seller:   with(func(d *seller.Details) { d.VATID, d.TaxNumber, d.Contact.Email = "", "37/123/45678", "" }),
			customer: customer(einvoice.Peppol, nil), draft: draft, field: "seller.contact.email", code: invoices.MissingSellerElectronicAddress}, "PEPPOL-EN16931-R020"},
		{readinessCase{name: "CII in dinars", seller: &full, customer: customer(einvoice.CII, map[string]any{"currency": "KWD"}),
			draft: draft, field: "currency", code: invoices.CurrencyNotRepresentable}, "BR-DEC-09"},
		{readinessCase{name: "UBL without a due date or terms", seller: &full, customer: customer(einvoice.UBL, nil),
			draft: without("payment_terms_days"), field: "payment_terms_days", code: invoices.MissingPaymentDue}, "BR-CO-25"},
		{readinessCase{name: "Factur-X, seller with a tax number and no registration",
			seller:   with(func(d *seller.Details) { d.VATID, d.TaxNumber, d.Registration = "", "37/123/45678", "" }),
			customer: customer(einvoice.FacturX, nil), draft: draft, field: "seller.registration", code: invoices.MissingSellerIdentifier}, "BR-CO-26"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			id := b.arrange(t, tc.readinessCase)
			path := "/v1/invoices/" + id
			before := get(t, b.h, path, b.clerk, http.StatusOK)
			written := b.written(t)

			r := b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil)
			requireProblem(t, r, http.StatusUnprocessableEntity, invoices.CodeInvoiceIncomplete)
			var refusal struct{ Errors []problem.FieldError }
			r.JSON(t, &refusal)
			require.Len(t, refusal.Errors, 1, "%v", refusal.Errors)
			require.Equal(t, tc.field, refusal.Errors[0].Field)
			require.Equal(t, tc.code, refusal.Errors[0].Code)
			require.Contains(t, refusal.Errors[0].Message, tc.rule)

			require.Equal(t, written, b.written(t), "no approval request, no audit event, no number")
			after := get(t, b.h, path, b.clerk, http.StatusOK)
			require.Equal(t, before.Header.Get("ETag"), after.Header.Get("ETag"))
			var inv invoices.Invoice
			after.JSON(t, &inv)
			require.Equal(t, invoices.StatusDraft, inv.Status)
			require.Equal(t, &invoices.Readiness{Ready: false, Missing: refusal.Errors}, inv.Readiness)
		})
	}

	for _, f := range []einvoice.Format{einvoice.XRechnungUBL, einvoice.XRechnungCII, einvoice.Peppol, einvoice.UBL, einvoice.CII} {
		t.Run(string(f)+" complete", func(t *testing.T) {
			id := b.arrange(t, readinessCase{seller: &full, customer: customer(f, nil), draft: draft})
			path := "/v1/invoices/" + id
			p := requireProblem(t, b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
			b.approve(t, p["approval_id"].(string))
			r := b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			var inv invoices.Invoice
			r.JSON(t, &inv)
			require.Equal(t, f, inv.BillTo.EInvoiceFormat, "the format is frozen with the buyer")
			r = get(t, b.h, path+"/einvoice", b.clerk, http.StatusOK)
			require.Contains(t, r.Header.Get("Content-Disposition"), einvoice.FileName(*inv.Number, f), "the customer's format by default")
			require.Contains(t, string(r.Body), "04011000-12345-67")
			r = b.h.Do(t, http.MethodGet, path+"/einvoice", b.clerk, nil, "If-None-Match", r.Header.Get("ETag"))
			require.Equal(t, http.StatusNotModified, r.StatusCode)
		})
	}
}

// Bad asks of an e-invoice: an unknown format is 422 naming format; a
// document of a customer without a format asks for one; a dinar invoice
// is 422 naming the rule EN 16931 cannot meet. Factur-X is a PDF; a
// credit note's e-invoice names the invoice it corrects (BG-3).
func TestEInvoiceRefusals(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	id := b.approvedIssue(t)
	path := "/v1/invoices/" + id
	r := b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var inv invoices.Invoice
	r.JSON(t, &inv)

	p := requireProblem(t, b.h.Do(t, http.MethodGet, path+"/einvoice?format=edifact", b.clerk, nil), http.StatusUnprocessableEntity, einvoice.CodeUnknownFormat)
	requireField(t, p, "format")
	p = requireProblem(t, b.h.Do(t, http.MethodGet, path+"/einvoice", b.clerk, nil), http.StatusUnprocessableEntity, invoices.CodeFormatRequired)
	requireField(t, p, "format")
	r = get(t, b.h, path+"/einvoice?format=facturx", b.clerk, http.StatusOK)
	require.Equal(t, "application/pdf", r.Header.Get("Content-Type"))
	require.Contains(t, r.Header.Get("Content-Disposition"), *inv.Number+".pdf")

	kwd := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Currency: "KWD"})
	dinars := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &kwd.ID, Currency: "KWD"})
	p = requireProblem(t, b.h.Do(t, http.MethodGet, "/v1/invoices/"+dinars.ID.String()+"/einvoice?format=cii", b.clerk, nil),
		http.StatusUnprocessableEntity, einvoice.CodeNotRepresentable)
	require.Equal(t, []any{map[string]any{"field": "currency", "code": "BR-DEC-09", "message": "KWD has 3 decimals; EN 16931 amounts have at most 2"}}, p["errors"])
	requireProblem(t, b.h.Do(t, http.MethodGet, "/v1/invoices/01a24bab-db9e-7257-9cbd-8c4525c8942d/einvoice?format=ubl", b.clerk, nil), http.StatusNotFound, "NOT_FOUND")

	cn := b.credit(t, id, map[string]any{"reason": "Rabatt", "amount": 100})
	r = get(t, b.h, "/v1/credit-notes/"+cn.ID.String()+"/einvoice?format=ubl", b.clerk, http.StatusOK)
	require.Contains(t, string(r.Body), "<cac:BillingReference>\n    <cac:InvoiceDocumentReference>\n      <cbc:ID>"+*inv.Number+"</cbc:ID>")
	r = get(t, b.h, "/v1/credit-notes/"+cn.ID.String()+"/einvoice?format=cii", b.clerk, http.StatusOK)
	require.Contains(t, string(r.Body), "<ram:InvoiceReferencedDocument>\n        <ram:IssuerAssignedID>"+*inv.Number+"</ram:IssuerAssignedID>")
}

// A customer switched to XRechnung (which the draft cannot meet: no buyer
// reference) while its approved draft is issued: whichever commits
// first, an issued invoice never carries a format its rules were not
// checked against. Either the issue wins and freezes format none, or the
// change wins and the issue is refused (the approval stale, or the draft
// incomplete naming buyer_reference).
func TestCustomerFormatChangeRacesTheIssue(t *testing.T) {
	t.Parallel()
	b := readinessBundle{setupHTTP(t)}
	full := einvoiceSeller()
	draft := map[string]any{"lines": []any{vatLine("S")}, "supply_date": "2026-03-02", "payment_terms_days": 14}
	outcomes := map[string]int{}
	for round := range 10 {
		id := b.arrange(t, readinessCase{seller: &full, customer: client(map[string]any{"name": "Client SARL " + string(rune('A'+round))}), draft: draft})
		path := "/v1/invoices/" + id
		var inv invoices.Invoice
		get(t, b.h, path, b.clerk, http.StatusOK).JSON(t, &inv)
		p := requireProblem(t, b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
		b.approve(t, p["approval_id"].(string))

		var wg sync.WaitGroup
		var issue, change *apptest.Response
		start := make(chan struct{})
		doIssue := func() { <-start; issue = b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil) }
		doChange := func() {
			<-start
			change = b.h.Do(t, http.MethodPatch, "/v1/customers/"+inv.CustomerID.String(), b.clerk, map[string]any{"einvoice_format": "xrechnung-cii"})
		}
		// Alternate which goroutine starts first, so either may commit first.
		if round%2 == 0 {
			wg.Go(doIssue)
			wg.Go(doChange)
		} else {
			wg.Go(doChange)
			wg.Go(doIssue)
		}
		close(start)
		wg.Wait()
		require.Equal(t, http.StatusOK, change.StatusCode, "%s", change.Body)
		switch issue.StatusCode {
		case http.StatusOK:
			var issued invoices.Invoice
			issue.JSON(t, &issued)
			require.Equal(t, einvoice.None, issued.BillTo.EInvoiceFormat, "issued before the change: the format it was checked against")
			outcomes["issued"]++
		case http.StatusConflict:
			requireProblem(t, issue, http.StatusConflict, approvals.CodeApprovalStale)
			outcomes["stale"]++
		default:
			p := requireProblem(t, issue, http.StatusUnprocessableEntity, invoices.CodeInvoiceIncomplete)
			requireField(t, p, "buyer_reference")
			outcomes["incomplete"]++
		}
		get(t, b.h, path, b.clerk, http.StatusOK).JSON(t, &inv)
		if inv.Status == invoices.StatusIssued {
			require.Equal(t, einvoice.None, inv.BillTo.EInvoiceFormat)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}
