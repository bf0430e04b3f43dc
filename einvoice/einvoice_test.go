package einvoice_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/internal/en16931"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

// issued is a document of an issued invoice in currency.
func issued(currency string) *document.Document {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	return &document.Document{Kind: document.KindInvoice, Number: "INV-2026-000001", Currency: currency, IssueDate: day, DueDate: day.AddDate(0, 0, 14),
		Seller: document.Party{Name: "Nordlicht GmbH", Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"},
			VATID: "DE136695976"},
		BillTo: document.Party{Name: "Acme & <Söhne>", Address: party.Address{Lines: []string{"Damrak 70"}, City: "Amsterdam", Country: "NL"}},
		Lines: []document.Line{{Description: "Beratung", Quantity: quantity.Quantity(75000), Unit: "HUR", UnitAmount: 10000, VATCategory: vat.Standard,
			TaxRateBPS: 1900, Amount: 75000, TaxAmount: 14250}},
		Subtotal: 75000, TaxTotal: 14250, Total: 89250}
}

func TestGenerateIsByteDeterministic(t *testing.T) {
	t.Parallel()
	for _, f := range []einvoice.Format{einvoice.UBL, einvoice.CII, einvoice.XRechnungUBL, einvoice.XRechnungCII, einvoice.Peppol} {
		a, err := einvoice.Generate(einvoice.Invoice{Document: issued("EUR")}, f)
		require.NoError(t, err)
		b, err := einvoice.Generate(einvoice.Invoice{Document: issued("EUR")}, f)
		require.NoError(t, err)
		require.Equal(t, a, b, "%s", f)
		require.True(t, bytes.Contains(a, []byte("Acme &amp; &lt;Söhne&gt;")), "%s escapes the buyer's name: %s", f, a)
		require.True(t, bytes.Contains(a, []byte(">892.50<")), "%s states the total in major units: %s", f, a)
	}
}

// EN 16931 allows two decimals (BR-DEC-*): a dinar invoice is refused
// naming the rule, never rounded.
func TestThreeDecimalCurrencyIsRefusedNamingTheRule(t *testing.T) {
	t.Parallel()
	for _, f := range []einvoice.Format{einvoice.UBL, einvoice.CII} {
		_, err := einvoice.Generate(einvoice.Invoice{Document: issued("KWD")}, f)
		pe, ok := problem.As(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, http.StatusUnprocessableEntity, pe.Status)
		require.Equal(t, einvoice.CodeNotRepresentable, pe.Code)
		require.Equal(t, "currency", pe.Errors[0].Field)
		require.Equal(t, "BR-DEC-09", pe.Errors[0].Code)
	}
	out, err := einvoice.Generate(einvoice.Invoice{Document: issued("JPY")}, einvoice.CII)
	require.NoError(t, err)
	require.True(t, bytes.Contains(out, []byte(">89250<")), "yen have no decimals: %s", out)
}

func TestGenerateRefusesADraft(t *testing.T) {
	t.Parallel()
	d := issued("EUR")
	d.Number = ""
	_, err := einvoice.Generate(einvoice.Invoice{Document: d}, einvoice.CII)
	require.Error(t, err)
}

func TestParseEndpoint(t *testing.T) {
	t.Parallel()
	e, err := einvoice.ParseEndpoint("peppol_id", " 0088:4035811991021 ")
	require.NoError(t, err)
	require.Equal(t, einvoice.Endpoint{Scheme: "0088", ID: "4035811991021"}, e)
	require.Equal(t, "0088:4035811991021", e.String())
	for _, bad := range []string{"4035811991021", "0000:123", "0088:", "0088:12 3"} {
		_, err := einvoice.ParseEndpoint("peppol_id", bad)
		pe, ok := problem.As(err)
		require.True(t, ok, "%q: %v", bad, err)
		require.Equal(t, "peppol_id", pe.Errors[0].Field, "%q", bad)
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, f := range einvoice.Formats() {
		got, err := einvoice.ParseFormat("format", string(f))
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	_, err := einvoice.ParseFormat("format", "edifact")
	pe, ok := problem.As(err)
	require.True(t, ok)
	require.Equal(t, http.StatusUnprocessableEntity, pe.Status)
	require.Equal(t, "format", pe.Errors[0].Field)
}

// The embedded EAS list is the artefacts' (BR-CL-25).
func TestEASCodesAreTheArtefacts(t *testing.T) {
	t.Parallel()
	dir, err := en16931.Dir()
	require.NoError(t, err)
	want, err := en16931.CodeList(filepath.Join(dir, en16931.UBL), "BR-CL-25")
	require.NoError(t, err)
	missing, extra := en16931.Drift(want, einvoice.EASCodes())
	require.Empty(t, missing, "in BR-CL-25, not embedded")
	require.Empty(t, extra, "embedded, not in BR-CL-25")
}
