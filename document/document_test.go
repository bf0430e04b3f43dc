package document_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

var (
	issued   = time.Date(2026, 11, 30, 14, 5, 6, 0, time.UTC)
	modified = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
)

// invoice is an issued USD invoice billing customer: four lines at three
// tax rates, 17,287.50 USD in all.
func invoice(customer string) *document.Document {
	balance := int64(1728750)
	return &document.Document{
		Kind: document.KindInvoice, ID: "0193a4c2-0000-7000-8000-000000000001", Number: "INV-2026-000042", Currency: "USD",
		Seller:    document.Party{Name: "Nordlicht Consulting GmbH", Address: "Hauptstraße 5\n10115 Berlin\nGermany", TaxID: "DE123456789"},
		BillTo:    document.Party{Name: customer, Email: "ap@example.com"},
		IssueDate: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), DueDate: time.Date(2026, 12, 30, 0, 0, 0, 0, time.UTC),
		Lines: []document.Line{
			{Description: "Consulting for Müller & Søn", Quantity: 80 * quantity.One, UnitAmount: 15000, TaxRateBPS: 1900, Amount: 1200000, TaxAmount: 228000},
			{Description: "Workshop in Łódź", Quantity: 1 * quantity.One, UnitAmount: 150000, TaxRateBPS: 1900, Amount: 150000, TaxAmount: 28500},
			{Description: "Travel to Αθήνα", Quantity: 2 * quantity.One, UnitAmount: 45000, TaxRateBPS: 700, Amount: 90000, TaxAmount: 6300},
			{Description: "Licence, Москва office", Quantity: 1 * quantity.One, UnitAmount: 25950, TaxRateBPS: 0, Amount: 25950, TaxAmount: 0},
		},
		Subtotal: 1465950, TaxTotal: 262800, Total: 1728750, Balance: &balance,
		Memo:    "Thank you.\nPayable by bank transfer.",
		Created: issued, Modified: modified,
	}
}

func render(t *testing.T, d *document.Document) []byte {
	t.Helper()
	pdf, err := document.Render(d)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(pdf, []byte("%PDF-")))
	return pdf
}

// pdftotext finds the number, whom it bills, each line with its quantity
// and amount, the totals and the tax per rate, whatever the script of the
// names.
func TestInvoiceReadsBackForUnicodeNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Müller & Søn", "Łódź", "Αθήνα", "Москва"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := invoice(name)
			text := documenttest.Text(t, render(t, d))
			require.Contains(t, text, "Nordlicht Consulting GmbH\nHauptstraße 5\n10115 Berlin\nGermany\nTax ID: DE123456789\n")
			require.Contains(t, text, "\nBill to\n"+name+"\nap@example.com\n")
			documenttest.RequireLines(t, text, "Invoice", "Number INV-2026-000042", "Issue date 2026-11-30", "Due date 2026-12-30",
				"Description Qty Unit price Tax Amount",
				"Consulting for Müller & Søn 80 150.00 19 % 12,000.00",
				"Workshop in Łódź 1 1,500.00 19 % 1,500.00",
				"Travel to Αθήνα 2 450.00 7 % 900.00",
				"Licence, Москва office 1 259.50 0 % 259.50",
				"Subtotal 14,659.50 USD", "Tax 2,628.00 USD", "Total 17,287.50 USD", "Balance due 17,287.50 USD",
				"0 % 259.50 0.00", "7 % 900.00 63.00", "19 % 13,500.00 2,565.00",
				"Thank you.", "Payable by bank transfer.",
				"Invoice INV-2026-000042 · page 1/1")
			require.NotContains(t, text, "DRAFT")
			require.Equal(t, "INV-2026-000042.pdf", d.FileName())
		})
	}
}

// The same document renders to the same bytes, however many times and
// from however many goroutines (fpdf writes fonts in map order and
// stamps the clock unless told otherwise); a change shows in the bytes.
func TestSameDocumentRendersToSameBytes(t *testing.T) {
	t.Parallel()
	first := render(t, invoice("Müller & Søn"))
	var wg sync.WaitGroup
	renders := make([][]byte, 16)
	for i := range renders {
		wg.Go(func() {
			pdf, err := document.Render(invoice("Müller & Søn"))
			if err != nil {
				t.Error(err)
			}
			renders[i] = pdf
		})
	}
	wg.Wait()
	for i, pdf := range renders {
		require.True(t, bytes.Equal(first, pdf), "render %d differs", i)
	}
	later := invoice("Müller & Søn")
	later.Modified = later.Modified.Add(time.Second)
	require.False(t, bytes.Equal(first, render(t, later)), "the modification date is the document's own")
}

func TestDraftIsMarkedDraft(t *testing.T) {
	t.Parallel()
	d := invoice("Αθήνα")
	d.Number, d.IssueDate, d.Mark, d.MarkNote = "", time.Time{}, document.MarkDraft, "not an invoice yet."
	text := documenttest.Text(t, render(t, d))
	documenttest.RequireLines(t, text, "DRAFT — not an invoice yet.", "Number assigned on issue", "Issue date on issue",
		"Invoice (draft) · page 1/1", "Travel to Αθήνα 2 450.00 7 % 900.00")
	require.Equal(t, "draft-0193a4c2-0000-7000-8000-000000000001.pdf", d.FileName())
}

func TestVoidIsMarkedVoidAndOwesNothing(t *testing.T) {
	t.Parallel()
	d := invoice("Москва")
	d.Mark, d.MarkNote, d.Balance = document.MarkVoid, "this invoice is not to be paid.", nil
	text := documenttest.Text(t, render(t, d))
	documenttest.RequireLines(t, text, "VOID — this invoice is not to be paid.", "Total 17,287.50 USD")
	require.NotContains(t, text, "Balance due")
}

// What was credited and paid shows under the totals, each payment in its
// own table, then what is still owed.
func TestPaymentsAndCreditsShowBeforeTheBalance(t *testing.T) {
	t.Parallel()
	d := invoice("Łódź")
	d.Credited = 25950
	d.Payments = []document.Payment{
		{Date: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), Label: "Bank transfer, ref 4711", Amount: 1000000},
		{Date: time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC), Label: "Card", Amount: 200000},
	}
	balance := d.Total - d.Credited - d.Paid()
	d.Balance = &balance
	text := documenttest.Text(t, render(t, d))
	documenttest.RequireLines(t, text, "Credited 259.50 USD", "Paid 12,000.00 USD", "Balance due 5,028.00 USD",
		"2026-12-05 Bank transfer, ref 4711 10,000.00 USD", "2026-12-09 Card 2,000.00 USD")
}

// A long invoice continues on further pages, the column titles on each,
// every line read back.
func TestLongInvoiceRunsOverPages(t *testing.T) {
	t.Parallel()
	d := invoice("Müller & Søn")
	d.Lines = nil
	for i := range 90 {
		d.Lines = append(d.Lines, document.Line{Description: fmt.Sprintf("Line %d: Łódź, Αθήνα, Москва", i+1), Quantity: 1 * quantity.One, UnitAmount: 1000, Amount: 1000})
	}
	d.Lines[10].Description = strings.Repeat("A long description that wraps. ", 30)
	text := documenttest.Text(t, render(t, d))
	pages := strings.Split(strings.TrimSuffix(text, "\f"), "\f")
	require.GreaterOrEqual(t, len(pages), 3)
	for i, page := range pages {
		if strings.Contains(page, "Łódź, Αθήνα, Москва") {
			require.True(t, documenttest.HasLine(page, "Description Qty Unit price Tax Amount"), "page %d has lines under no column titles", i+1)
		}
	}
	for i := range 90 {
		if i != 10 {
			documenttest.RequireLines(t, text, fmt.Sprintf("Line %d: Łódź, Αθήνα, Москва 1 10.00 0 %% 10.00", i+1))

		}
	}
	documenttest.RequireLines(t, text, fmt.Sprintf("Invoice INV-2026-000042 · page %d/%d", len(pages), len(pages)))

}

func TestRenderRefusesADocumentWithoutItsOwnDates(t *testing.T) {
	t.Parallel()
	d := invoice("Łódź")
	d.Created = time.Time{}
	_, err := document.Render(d)
	require.ErrorContains(t, err, "Created and Modified must be set")
}

func TestTaxGroupsSumLinesByRateLowestFirst(t *testing.T) {
	t.Parallel()
	d := invoice("Łódź")
	require.Equal(t, []document.TaxGroup{
		{RateBPS: 0, Net: 25950, Tax: 0},
		{RateBPS: 700, Net: 90000, Tax: 6300},
		{RateBPS: 1900, Net: 1350000, Tax: 256500},
	}, d.TaxGroups())
	var tax int64
	for _, g := range d.TaxGroups() {
		tax += g.Tax
	}
	require.Equal(t, d.TaxTotal, tax)
	require.Empty(t, (&document.Document{}).TaxGroups())
}

// Characters above U+FFFF (emoji, rare Han characters, mathematical
// letters) draw as U+FFFD in every field, where fpdf would fail or panic
// on them; a zero-width joiner or variation selector between them draws
// nothing rather than a box. The caller's document is left as it was.
func TestTextOutsideTheBMPDrawsAsReplacement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		set   func(d *document.Document)
		lines []string
	}{
		{"bill to", func(d *document.Document) { d.BillTo.Name = "Rocket 🚀 Labs" }, []string{"Rocket \uFFFD Labs"}},
		{"line", func(d *document.Document) { d.Lines[0].Description = "Launch 🚀, 𠀋 and 𝔘" }, []string{"Launch \uFFFD, \uFFFD and \uFFFD 80 150.00 19 % 12,000.00"}},
		{"seller", func(d *document.Document) {
			d.Seller = document.Party{Name: "Seller 🚀", Address: "Street 🏠 1\nCity", TaxID: "DE🚀1", Email: "a@🚀.example"}
		}, []string{"Seller \uFFFD", "Street \uFFFD 1", "City", "Tax ID: DE\uFFFD1", "a@\uFFFD.example"}},
		{"memo", func(d *document.Document) { d.Memo = "Thanks 🙏\nBye" }, []string{"Thanks \uFFFD", "Bye"}},
		{"number", func(d *document.Document) { d.Number = "INV-🚀-1" }, []string{"Number INV-\uFFFD-1", "Invoice INV-\uFFFD-1 · page 1/1"}},
		{"fact", func(d *document.Document) { d.Facts = []document.Fact{{Label: "Ref 🚀", Value: "PO 🚀 7"}} }, []string{"Ref \uFFFD PO \uFFFD 7"}},
		{"payment", func(d *document.Document) {
			d.Payments = []document.Payment{{Date: issued, Label: "Card 💳", Amount: 100}}
		}, []string{"2026-11-30 Card \uFFFD 1.00 USD"}},
		{"mark", func(d *document.Document) { d.Mark, d.MarkNote = document.MarkVoid, "voided 🗑" }, []string{"VOID — voided \uFFFD"}},
		{"sequences", func(d *document.Document) {
			d.BillTo.Name = "Family 👨‍👩‍👧, thumbs 👍🏽, heart ❤️, soft\u00adhyphen"
		}, []string{"Family \uFFFD\uFFFD\uFFFD, thumbs \uFFFD\uFFFD, heart ❤, softhyphen"}},
		{"invalid UTF-8", func(d *document.Document) { d.BillTo.Name = "Bad \xff\xfe bytes" }, []string{"Bad \uFFFD bytes"}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			t.Parallel()
			d := invoice("Müller & Søn")
			tc.set(d)
			want := *d
			want.Lines = slices.Clone(d.Lines)
			text := documenttest.Text(t, render(t, d))
			documenttest.RequireLines(t, text, tc.lines...)
			require.NotContains(t, text, "🚀")
			require.Equal(t, want, *d, "Render leaves the caller's document as it was")
		})
	}
}
