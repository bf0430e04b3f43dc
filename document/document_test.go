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
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
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
		Seller: document.Party{Name: "Nordlicht Consulting GmbH",
			Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"}, VATID: "DE136695976"},
		BillTo:    document.Party{Name: customer, Email: "ap@example.com"},
		IssueDate: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), DueDate: time.Date(2026, 12, 30, 0, 0, 0, 0, time.UTC),
		Lines: []document.Line{
			{Description: "Consulting for Müller & Søn", Quantity: 80 * quantity.One, Unit: "HUR", UnitAmount: 15000, VATCategory: vat.Standard, TaxRateBPS: 1900, Amount: 1200000, TaxAmount: 228000},
			{Description: "Workshop in Łódź", Quantity: 1 * quantity.One, Unit: "DAY", UnitAmount: 150000, VATCategory: vat.Standard, TaxRateBPS: 1900, Amount: 150000, TaxAmount: 28500},
			{Description: "Travel to Αθήνα", Quantity: 2 * quantity.One, Unit: "C62", UnitAmount: 45000, VATCategory: vat.Standard, TaxRateBPS: 700, Amount: 90000, TaxAmount: 6300},
			{Description: "Licence, Москва office", Quantity: 1 * quantity.One, Unit: "C62", UnitAmount: 25950, VATCategory: vat.ZeroRated, TaxRateBPS: 0, Amount: 25950, TaxAmount: 0},
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
			require.Contains(t, text, "Nordlicht Consulting GmbH\nHauptstraße 5\n10115 Berlin\nGermany\nVAT ID: DE136695976\n")
			require.Contains(t, text, "\nBill to\n"+name+"\nEmail: ap@example.com\n")
			documenttest.RequireLines(t, text, "Invoice", "Number INV-2026-000042", "Issue date 30 November 2026", "Due date 30 December 2026",
				"Description Qty Unit Unit price VAT Net amount",
				"Consulting for Müller & Søn 80 hours 150.00 19 % 12,000.00",
				"Workshop in Łódź 1 day 1,500.00 19 % 1,500.00",
				"Travel to Αθήνα 2 units 450.00 7 % 900.00",
				"Licence, Москва office 1 unit 259.50 Z 259.50",
				"Subtotal 14,659.50 USD", "VAT 2,628.00 USD", "Total 17,287.50 USD", "Balance due 17,287.50 USD",
				"S Standard rated 19 % 13,500.00 2,565.00", "S Standard rated 7 % 900.00 63.00", "Z Zero rated 0 % 259.50 0.00",
				"Zero rated: VAT charged at 0 %",
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
	for _, lang := range document.Languages() {
		require.True(t, bytes.Equal(render(t, article226(lang)), render(t, article226(lang))), "%s renders differently", lang)
	}
}

func TestDraftIsMarkedDraft(t *testing.T) {
	t.Parallel()
	d := invoice("Αθήνα")
	d.Number, d.IssueDate, d.Mark = "", time.Time{}, document.MarkDraft
	text := documenttest.Text(t, render(t, d))
	documenttest.RequireLines(t, text, "DRAFT — a preview as it will be issued; its number, issue date and seller are fixed on issue.",
		"Number assigned on issue", "Issue date on issue", "Invoice (draft) · page 1/1", "Travel to Αθήνα 2 units 450.00 7 % 900.00")
	require.Equal(t, "draft-0193a4c2-0000-7000-8000-000000000001.pdf", d.FileName())
}

func TestVoidIsMarkedVoidAndOwesNothing(t *testing.T) {
	t.Parallel()
	d := invoice("Москва")
	d.Mark, d.Balance = document.MarkVoid, nil
	text := documenttest.Text(t, render(t, d))
	documenttest.RequireLines(t, text, "VOID — this invoice was voided and is not to be paid.", "Total 17,287.50 USD")
	require.NotContains(t, text, "Balance due")
}

// What was credited and paid shows under the totals, each payment in its
// own table with its method in the document's language and its
// reference, a reversed one again with its reason, then what is still
// owed.
func TestPaymentsAndCreditsShowBeforeTheBalance(t *testing.T) {
	t.Parallel()
	payments := []document.Payment{
		{Date: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), Method: document.BankTransfer, Reference: "ref 4711", Amount: 1000000},
		{Date: time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC), Method: document.Card, Amount: 200000},
		{Date: time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC), Method: "other", Reference: "Paid in full", Amount: 100},
		{Date: time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC), Reversal: true, Reference: "bounced", Amount: -100},
		{Date: time.Date(2026, 12, 11, 0, 0, 0, 0, time.UTC), Method: document.Cash, Amount: 0},
	}
	for _, c := range []struct {
		lang  document.Language
		lines []string
	}{
		{document.English, []string{"Credited 259.50 USD", "Paid 12,000.00 USD", "Balance due 5,028.00 USD", "Date Payment Amount",
			"5 December 2026 Bank transfer · ref 4711 10,000.00 USD", "9 December 2026 Card 2,000.00 USD",
			"9 December 2026 Paid in full 1.00 USD", "10 December 2026 Reversed: bounced -1.00 USD", "11 December 2026 Cash 0.00 USD"}},
		{document.German, []string{"Datum Zahlung Betrag", "5. Dezember 2026 Überweisung · ref 4711 10.000,00 USD",
			"9. Dezember 2026 Kartenzahlung 2.000,00 USD", "10. Dezember 2026 Rückbuchung: bounced -1,00 USD", "11. Dezember 2026 Barzahlung 0,00 USD"}},
		{document.French, []string{"5 décembre 2026 Virement · ref 4711 10 000,00 USD", "9 décembre 2026 Carte bancaire 2 000,00 USD",
			"10 décembre 2026 Annulation : bounced -1,00 USD", "11 décembre 2026 Espèces 0,00 USD"}},
	} {
		t.Run(string(c.lang), func(t *testing.T) {
			t.Parallel()
			d := invoice("Łódź")
			d.Language = c.lang
			d.Credited = 25950
			d.Payments = payments
			balance := d.Total - d.Credited - d.Paid()
			d.Balance = &balance
			documenttest.RequireLines(t, documenttest.Text(t, render(t, d)), c.lines...)
		})
	}
}

// A long invoice continues on further pages, the column titles on each,
// every line read back.
func TestLongInvoiceRunsOverPages(t *testing.T) {
	t.Parallel()
	d := invoice("Müller & Søn")
	d.Lines = nil
	for i := range 90 {
		d.Lines = append(d.Lines, document.Line{Description: fmt.Sprintf("Line %d: Łódź, Αθήνα, Москва", i+1), Quantity: 1 * quantity.One, Unit: "C62", UnitAmount: 1000,
			VATCategory: vat.ZeroRated, Amount: 1000})
	}
	d.Lines[10].Description = strings.Repeat("A long description that wraps. ", 30)
	text := documenttest.Text(t, render(t, d))
	pages := strings.Split(strings.TrimSuffix(text, "\f"), "\f")
	require.GreaterOrEqual(t, len(pages), 3)
	for i, page := range pages {
		if strings.Contains(page, "Łódź, Αθήνα, Москва") {
			require.True(t, documenttest.HasLine(page, "Description Qty Unit Unit price VAT Net amount"), "page %d has lines under no column titles", i+1)
		}
	}
	for i := range 90 {
		if i != 10 {
			documenttest.RequireLines(t, text, fmt.Sprintf("Line %d: Łódź, Αθήνα, Москва 1 unit 10.00 Z 10.00", i+1))

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

// The VAT breakdown has one group per category and rate, in the order
// the lines first use it: two categories at 0 % are two groups, and a
// category's lines anywhere on the invoice add up in one.
func TestTaxGroupsSumLinesByCategoryAndRateInOrderOfUse(t *testing.T) {
	t.Parallel()
	d := article226(document.English)
	d.Lines = append(d.Lines,
		document.Line{Quantity: quantity.One, VATCategory: vat.ReverseCharge, Amount: 5000},
		document.Line{Quantity: quantity.One, VATCategory: vat.Standard, TaxRateBPS: 1900, Amount: 100, TaxAmount: 19})
	require.Equal(t, []document.TaxGroup{
		{Category: vat.Standard, RateBPS: 1900, Net: 450100, Tax: 85519},
		{Category: vat.Standard, RateBPS: 700, Net: 29940, Tax: 2096},
		{Category: vat.ReverseCharge, RateBPS: 0, Net: 80000, Tax: 0},
		{Category: vat.Exempt, RateBPS: 0, Net: 1000, Tax: 0},
	}, d.TaxGroups())
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
		{"line", func(d *document.Document) { d.Lines[0].Description = "Launch 🚀, 𠀋 and 𝔘" }, []string{"Launch \uFFFD, \uFFFD and \uFFFD 80 hours 150.00 19 % 12,000.00"}},
		{"seller", func(d *document.Document) {
			d.Seller = document.Party{Name: "Seller 🚀", Address: party.Address{Lines: []string{"Street 🏠 1"}, City: "City"}, VATID: "DE🚀1", Email: "a@🚀.example"}
		}, []string{"Seller \uFFFD", "Street \uFFFD 1", "City", "VAT ID: DE\uFFFD1", "Email: a@\uFFFD.example"}},
		{"memo", func(d *document.Document) { d.Memo = "Thanks 🙏\nBye" }, []string{"Thanks \uFFFD", "Bye"}},
		{"number", func(d *document.Document) { d.Number = "INV-🚀-1" }, []string{"Number INV-\uFFFD-1", "Invoice INV-\uFFFD-1 · page 1/1"}},
		{"purchase order", func(d *document.Document) { d.PurchaseOrder = "PO 🚀 7" }, []string{"Purchase order PO \uFFFD 7"}},
		{"payment", func(d *document.Document) {
			d.Payments = []document.Payment{{Date: issued, Method: document.Card, Reference: "💳", Amount: 100}}
		}, []string{"30 November 2026 Card · \uFFFD 1.00 USD"}},
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

// A credit note names the invoice it corrects, by number and date
// (Article 219), and its reason, in its language; it asks for no payment
// even where the source left bank accounts and terms on it.
func TestCreditNoteNamesTheInvoiceItCorrects(t *testing.T) {
	t.Parallel()
	for lang, want := range map[document.Language][]string{
		en: {"Credit note", "Number CN-2026-000007", "Corrects invoice INV-2026-000042", "Invoice date 6 December 2026",
			"Reason", "Workshop cancelled", "Credit note CN-2026-000007 · page 1/1"},
		de: {"Rechnungskorrektur", "Nummer CN-2026-000007", "Korrigiert Rechnung INV-2026-000042", "Rechnungsdatum 6. Dezember 2026",
			"Grund", "Workshop cancelled", "Rechnungskorrektur CN-2026-000007 · Seite 1/1"},
		fr: {"Avoir", "Numéro CN-2026-000007", "Rectifie la facture INV-2026-000042", "Date de la facture 6 décembre 2026",
			"Motif", "Workshop cancelled", "Avoir CN-2026-000007 · page 1/1"},
	} {
		t.Run(string(lang), func(t *testing.T) {
			t.Parallel()
			d := article226(lang)
			d.Kind, d.Number, d.Balance = document.KindCreditNote, "CN-2026-000007", nil
			d.Corrects = &document.Reference{Number: "INV-2026-000042", Date: day(2026, 12, 6)}
			d.Reason = "Workshop cancelled"
			text := documenttest.Text(t, render(t, d))
			documenttest.RequireLines(t, text, want...)
			require.NotContains(t, text, "DE89 3704")
			require.NotContains(t, text, texts(lang).payment)
		})
	}
}

// texts are a few of the words each language prints, for tests that look
// for their absence.
func texts(lang document.Language) struct{ payment, balance string } {
	return map[document.Language]struct{ payment, balance string }{
		en: {"Payable within", "Balance due"},
		de: {"Zahlbar innerhalb", "Offener Betrag"},
		fr: {"Payable sous", "Reste à payer"},
	}[lang]
}

// A draft and a void invoice say so in their language; a void one asks
// for no payment.
func TestMarksReadInTheLanguage(t *testing.T) {
	t.Parallel()
	for lang, want := range map[document.Language][2]string{
		en: {"DRAFT — a preview as it will be issued; its number, issue date and seller are fixed on issue.",
			"VOID — this invoice was voided and is not to be paid."},
		de: {"ENTWURF — eine Vorschau, wie sie ausgestellt wird; Nummer, Ausstellungsdatum und Verkäufer werden bei der Ausstellung festgelegt.",
			"STORNIERT — diese Rechnung wurde storniert und ist nicht zu bezahlen."},
		fr: {"BROUILLON — un aperçu tel qu'il sera émis ; le numéro, la date d'émission et le vendeur sont fixés à l'émission.",
			"ANNULÉE — cette facture a été annulée et ne doit pas être payée."},
	} {
		t.Run(string(lang), func(t *testing.T) {
			t.Parallel()
			draft := article226(lang)
			draft.Number, draft.IssueDate, draft.Mark = "", time.Time{}, document.MarkDraft
			text := documenttest.Text(t, render(t, draft))
			documenttest.RequireText(t, text, want[0])
			documenttest.RequireText(t, text, texts(lang).payment)
			documenttest.RequireLines(t, text, map[document.Language][]string{
				en: {"Number assigned on issue", "Issue date on issue"},
				de: {"Nummer wird bei Ausstellung vergeben", "Ausstellungsdatum bei Ausstellung"},
				fr: {"Numéro attribué à l'émission", "Date d'émission à l'émission"},
			}[lang]...)
			// The mark's sentence may take the page's last room.
			require.Contains(t, text, map[document.Language]string{
				en: "\nInvoice (draft) · page 1/", de: "\nRechnung (Entwurf) · Seite 1/", fr: "\nFacture (brouillon) · page 1/",
			}[lang])

			void := article226(lang)
			void.Mark, void.Balance = document.MarkVoid, nil
			text = documenttest.Text(t, render(t, void))
			documenttest.RequireText(t, text, want[1])
			require.NotContains(t, text, texts(lang).payment)
			require.NotContains(t, text, texts(lang).balance)
			require.NotContains(t, text, "DE89 3704")
		})
	}
}

// Terms read in the language's singular and plural, and 0 days is on
// receipt; a date of supply prints as such, beside or without a period.
func TestTermsAndSupplyDate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		days int
		want map[document.Language]string
	}{
		{0, map[document.Language]string{en: "Payable on receipt", de: "Zahlbar sofort nach Erhalt", fr: "Payable à réception"}},
		{1, map[document.Language]string{en: "Payable within 1 day", de: "Zahlbar innerhalb von 1 Tag", fr: "Payable sous 1 jour"}},
		{30, map[document.Language]string{en: "Payable within 30 days", de: "Zahlbar innerhalb von 30 Tagen", fr: "Payable sous 30 jours"}},
	} {
		for lang, want := range tc.want {
			d := article226(lang)
			d.PaymentTermsDays = &tc.days
			d.ServicePeriod, d.SupplyDate = document.Period{}, day(2026, 11, 30)
			text := documenttest.Text(t, render(t, d))
			documenttest.RequireLines(t, text, want, map[document.Language]string{
				en: "Date of supply 30 November 2026", de: "Leistungsdatum 30. November 2026", fr: "Date de livraison 30 novembre 2026",
			}[lang])
		}
	}
	// Without terms or accounts there is no payment part.
	d := article226(en)
	d.PaymentTermsDays, d.BankAccounts = nil, nil
	require.NotContains(t, documenttest.Text(t, render(t, d)), "\nPayment\n")
}

func TestRenderRefusesALanguageOrKindItDoesNotKnow(t *testing.T) {
	t.Parallel()
	d := article226(en)
	d.Language = "it"
	_, err := document.Render(d)
	require.ErrorContains(t, err, `documents are written in en, de or fr, not "it"`)
	d = article226(en)
	d.Kind = "receipt"
	_, err = document.Render(d)
	require.ErrorContains(t, err, `kind "receipt"`)
	// No language is English.
	d = article226(en)
	d.Language = ""
	documenttest.RequireLines(t, documenttest.Text(t, render(t, d)), "Issue date 6 December 2026")
}
