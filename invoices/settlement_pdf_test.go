package invoices_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// A credit note's PDF, for each of the names the font must draw: its
// number, the invoice it credits, whom it bills, its lines and totals,
// the same bytes every time. The credited invoice's PDF shows the
// payment, its reversal, what was credited and the balance due.
func TestCreditNoteAndSettledInvoicePDF(t *testing.T) {
	t.Parallel()
	pb := setupPDF(t, &nordlicht)
	b := httpBundle{ctx: pb.ctx, h: pb.h, clerk: pb.clerk, approver: pb.approver}
	lines := []invoices.LineInput{
		{Description: "Beratung für Müller & Søn", Quantity: 80 * quantity.One, UnitAmount: 15000, TaxRateBPS: 1900},
		{Description: "Warsztat w Łodzi (Łódź)", Quantity: 1 * quantity.One, UnitAmount: 150000, TaxRateBPS: 1900},
		{Description: "Ταξίδι στην Αθήνα", Quantity: 2 * quantity.One, UnitAmount: 45000, TaxRateBPS: 700},
		{Description: "Лицензия, Москва", Quantity: 1 * quantity.One, UnitAmount: 25950},
	}
	today := longDate(time.Now()) // the payments' received_on
	for _, name := range []string{"Müller & Søn", "Łódź", "Αθήνα", "Москва"} {
		t.Run(name, func(t *testing.T) {
			cu := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: name, Currency: "EUR"})
			inv := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &cu.ID, Lines: lines})
			id := inv.ID.String()
			p := b.pay(t, id, 500000)
			cn := b.credit(t, id, map[string]any{"reason": "Workshop in Łódź cancelled", "lines": []any{
				map[string]any{"position": 1, "quantity": 1}, map[string]any{"position": 2, "quantity": 1}}})

			r := b.h.Do(t, http.MethodGet, "/v1/credit-notes/"+cn.ID.String()+"/pdf", b.approver, nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			require.Equal(t, "application/pdf", r.Header.Get("Content-Type"))
			require.Equal(t, `inline; filename=`+cn.Number+`.pdf`, r.Header.Get("Content-Disposition"))
			text := documenttest.Text(t, r.Body)
			require.Contains(t, text, "\nBill to\n"+name+"\n"+customerBlock)
			documenttest.RequireLines(t, text, "Credit note", "Number "+cn.Number, "Issue date "+longDate(cn.IssuedAt),
				"Corrects invoice "+*inv.Number, "Invoice date "+longDate(*inv.IssuedAt),
				"Warsztat w Łodzi (Łódź) 1 unit 1,500.00 19 % 1,500.00",
				"Ταξίδι στην Αθήνα 1 unit 450.00 7 % 450.00",
				"Subtotal 1,950.00 EUR", "VAT 316.50 EUR", "Total 2,266.50 EUR")
			require.Contains(t, text, "\nReason\nWorkshop in Łódź cancelled\n")
			require.NotContains(t, text, "Balance due")
			require.NotContains(t, text, "Beratung")
			again := b.h.Do(t, http.MethodGet, "/v1/credit-notes/"+cn.ID.String()+"/pdf", b.clerk, nil)
			require.True(t, bytes.Equal(r.Body, again.Body), "the same credit note renders to the same bytes")

			rev := b.h.Do(t, http.MethodPost, "/v1/payments/"+p.ID.String()+"/reverse", b.clerk, map[string]any{"reason": "Returned by the bank"})
			require.Equal(t, http.StatusOK, rev.StatusCode, "%s", rev.Body)
			b.pay(t, id, 100000)
			_, text = pb.pdf(t, id, b.clerk)
			documenttest.RequireLines(t, text, "Credit notes "+cn.Number, "Total 17,287.50 EUR", "Credited 2,266.50 EUR",
				"Paid 1,000.00 EUR", "Balance due 14,021.00 EUR",
				today+" Bank transfer · SEPA 4711 5,000.00 EUR", today+" Reversed: Returned by the bank -5,000.00 EUR",
				today+" Bank transfer · SEPA 4711 1,000.00 EUR")
		})
	}
	requireProblem(t, b.h.Do(t, http.MethodGet, "/v1/credit-notes/0193a4c2-0000-7000-8000-000000000001/pdf", b.clerk, nil), http.StatusNotFound, "NOT_FOUND")
	requireProblem(t, b.h.Do(t, http.MethodGet, "/v1/credit-notes/nope", b.clerk, nil), http.StatusNotFound, "NOT_FOUND")
}
