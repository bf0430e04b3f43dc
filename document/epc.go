package document

import (
	"fmt"
	"strings"
	"unicode/utf8"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// EPC069-12 v2 ("GiroCode", the European Payments Council's quick
// response code for SEPA credit transfers): the fields a payer's banking
// app reads, one per line. The limits are the guideline's: a name of 70
// characters, an unstructured reference of 140, an amount from 0.01 to
// 999,999,999.99 euro, and at most 331 bytes in all.
const (
	epcMaxName      = 70
	epcMaxReference = 140
	epcMaxAmount    = 99_999_999_999
	epcMaxBytes     = 331
	// qrSize is the code's side in millimetres: the guideline asks for
	// at least 2 cm printed; 30 mm keeps a version 10 code's modules
	// above 0.5 mm for a phone's camera at arm's length.
	qrSize = 30.0
)

// EPCPayload is the EPC069-12 version 002 payload an invoice's QR code
// carries — service tag BCD, UTF-8, SEPA credit transfer, the seller's
// first account (BIC where it has one), its name, the balance due in
// euro and the invoice number as the unstructured reference — and
// whether the invoice has one: an issued invoice in EUR (the scheme is
// euro only) with a balance to pay and a bank account to pay it to.
func (d *Document) EPCPayload() (string, bool) {
	if d.Kind != KindInvoice || d.Mark != MarkNone || d.Number == "" || d.Currency != "EUR" ||
		d.Balance == nil || *d.Balance <= 0 || *d.Balance > epcMaxAmount || len(d.BankAccounts) == 0 {
		return "", false
	}
	acct := d.BankAccounts[0]
	fields := []string{
		"BCD", "002", "1", "SCT",
		string(acct.BIC),
		clipRunes(oneLine(d.Seller.Name), epcMaxName),
		string(acct.IBAN),
		fmt.Sprintf("EUR%d.%02d", *d.Balance/100, *d.Balance%100),
		"", // purpose
		"", // structured (RF) reference: the unstructured one is used
		clipRunes(oneLine(d.Number), epcMaxReference),
	}
	payload := strings.Join(fields, "\n")
	if len(payload) > epcMaxBytes {
		return "", false
	}
	return payload, true
}

// clipRunes is s cut to at most n characters.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// modules is a QR code's dark modules, row by row, for the renderer to
// draw as vector squares (crisp at any zoom, and no image to embed).
type modules [][]bool

func (m *modules) Write(mat qrcode.Matrix) error {
	*m = mat.Bitmap()
	return nil
}

func (m *modules) Close() error { return nil }

// qrModules encodes payload at error correction level M, as EPC069-12
// requires, in byte mode (UTF-8).
func qrModules(payload string) (modules, error) {
	qr, err := qrcode.NewWith(payload, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium),
		qrcode.WithEncodingMode(qrcode.EncModeByte))
	if err != nil {
		return nil, err
	}
	var m modules
	if err := qr.Save(&m); err != nil {
		return nil, err
	}
	return m, nil
}
