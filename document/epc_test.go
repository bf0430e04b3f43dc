package document_test

import (
	"strings"
	"testing"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/party"
	"github.com/stretchr/testify/require"
)

// An issued EUR invoice with a balance and a bank account carries the
// EPC069-12 QR code a payer's banking app scans: read back from the
// rendered page by zbar, its payload holds, field by field, the service
// tag, version 002, UTF-8, SEPA credit transfer, the BIC, the seller's
// name, the IBAN, the balance due (not the total) and the number as the
// reference.
func TestInvoiceCarriesTheEPCPaymentCode(t *testing.T) {
	t.Parallel()
	d := eurInvoice()
	paid := int64(1000000)
	d.Payments = []document.Payment{{Date: d.IssueDate, Method: document.BankTransfer, Amount: paid}}
	balance := d.Total - paid
	d.Balance = &balance

	codes := documenttest.QRCodes(t, render(t, d))
	require.Len(t, codes, 1)
	fields := strings.Split(codes[0], "\n")
	require.Equal(t, []string{
		"BCD",                       // service tag
		"002",                       // version
		"1",                         // character set: UTF-8
		"SCT",                       // SEPA credit transfer
		"COBADEFFXXX",               // BIC
		"Nordlicht Consulting GmbH", // beneficiary
		"DE89370400440532013000",    // IBAN, electronic form
		"EUR7287.50",                // the balance: 17,287.50 less 10,000.00 paid
		"",                          // purpose
		"",                          // structured reference
		"INV-2026-000042",           // unstructured reference: the number
	}, fields)
	payload, ok := d.EPCPayload()
	require.True(t, ok)
	require.Equal(t, payload, codes[0])
	documenttest.RequireText(t, documenttest.Text(t, render(t, d)), "Scan the code with a banking app to pay the balance due by transfer.")

	// A name with a non-Latin letter and over 70 characters is cut to 70
	// and read back as UTF-8; a German document explains the code in German.
	d.Seller.Name = "Ærøskøbing Ølbryggeri " + strings.Repeat("Ä", 60)
	d.Language = document.German
	codes = documenttest.QRCodes(t, render(t, d))
	require.Len(t, codes, 1)
	require.Equal(t, []rune(d.Seller.Name)[:70], []rune(strings.Split(codes[0], "\n")[5]))
	documenttest.RequireText(t, documenttest.Text(t, render(t, d)), "Scannen Sie den Code mit Ihrer Banking-App, um den offenen Betrag zu überweisen.")
}

// No code where the scheme does not apply or nothing is to be paid:
// another currency, a zero balance, no bank account, a draft, a void
// invoice, a credit note.
func TestNoEPCPaymentCodeWhereNothingIsToBePaidByIt(t *testing.T) {
	t.Parallel()
	zero := int64(0)
	for name, change := range map[string]func(d *document.Document){
		"USD":             func(d *document.Document) { d.Currency = "USD" },
		"zero balance":    func(d *document.Document) { d.Balance = &zero },
		"no bank account": func(d *document.Document) { d.BankAccounts = nil },
		"draft":           func(d *document.Document) { d.Mark, d.Number = document.MarkDraft, "" },
		"void":            func(d *document.Document) { d.Mark, d.Balance = document.MarkVoid, nil },
		"credit note": func(d *document.Document) {
			d.Kind, d.Balance = document.KindCreditNote, nil
			d.Corrects = &document.Reference{Number: "INV-2026-000041", Date: d.IssueDate}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := eurInvoice()
			change(d)
			_, ok := d.EPCPayload()
			require.False(t, ok)
			pdf := render(t, d)
			require.Empty(t, documenttest.QRCodes(t, pdf))
			require.NotContains(t, documenttest.Text(t, pdf), "banking app")
		})
	}
}

// eurInvoice is the test invoice in euro, payable to one account.
func eurInvoice() *document.Document {
	d := invoice("Globex GmbH")
	d.Currency = "EUR"
	d.BankAccounts = []party.BankAccount{{IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}}
	return d
}
