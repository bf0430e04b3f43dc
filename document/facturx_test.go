package document_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/internal/debtest"
	"github.com/invoiced/invoiced/internal/en16931"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

// facturXDocuments are an issued invoice's document, in German, and a
// credit note's.
func facturXDocuments() []*document.Document {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	seller := document.Party{Name: "Nordlicht GmbH", Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"},
		VATID: "DE136695976", Contact: party.Contact{Name: "Ada", Email: "billing@nordlicht.example"}}
	buyer := document.Party{Name: "Acme & <Söhne> \"AG\"", Address: party.Address{Lines: []string{"Marktplatz 1"}, Postcode: "80331", City: "München", Country: "DE"},
		VATID: "DE811907980"}
	lines := []document.Line{
		{Description: "Beratung", Quantity: quantity.Quantity(75000), Unit: "HUR", UnitAmount: 10000, VATCategory: vat.Standard, TaxRateBPS: 1900, Amount: 75000, TaxAmount: 14250},
		{Description: "Fachbuch", Quantity: 2 * quantity.One, Unit: "H87", UnitAmount: 2500, VATCategory: vat.Standard, TaxRateBPS: 700, Amount: 5000, TaxAmount: 350},
	}
	inv := &document.Document{Kind: document.KindInvoice, ID: "0190a0b0-0000-7000-8000-000000000001", Number: "INV-2026-000042", Currency: "EUR",
		Language: document.German, IssueDate: day, DueDate: day.AddDate(0, 0, 14), Seller: seller, BillTo: buyer, Lines: lines,
		Subtotal: 80000, TaxTotal: 14600, Total: 94600, Created: day.Add(9 * time.Hour), Modified: day.Add(9 * time.Hour),
		BankAccounts: []party.BankAccount{{IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}}}
	cn := &document.Document{Kind: document.KindCreditNote, ID: "0190a0b0-0000-7000-8000-000000000002", Number: "CN-2026-000007", Currency: "EUR",
		IssueDate: day.AddDate(0, 0, 3), Seller: seller, BillTo: buyer, Lines: lines[1:], Reason: "Returned books",
		Corrects: &document.Reference{Number: inv.Number, Date: day}, Subtotal: 5000, TaxTotal: 350, Total: 5350,
		Created: day.AddDate(0, 0, 3), Modified: day.AddDate(0, 0, 3)}
	return []*document.Document{inv, cn}
}

// Done when: the Factur-X PDF of an invoice and of a credit note is a
// PDF/A-3b whose factur-x.xml pdfdetach lists and extracts, byte for byte
// the CII, which the EN 16931 artefacts validate (0 fatal) against the
// rules and the schema; qpdf --check passes; the XMP declares PDF/A-3b
// and the fx: extension schema with DocumentType INVOICE and
// ConformanceLevel EN 16931; a third-party reader (npm factur-x-kit)
// reads the number and the total back; and the same document gives the
// same bytes.
func TestFacturXIsAPDFA3WithItsCII(t *testing.T) {
	t.Parallel()
	qpdf := debtest.Command(t, "qpdf", "qpdf")
	pdfdetach := debtest.Command(t, "pdfdetach", "poppler-utils")
	node, reader := nodetest.Install(t, filepath.Join("..", "e2e", "facturx"), "factur-x-kit/package.json")
	dir := t.TempDir()
	var extracted []string
	for _, d := range facturXDocuments() {
		cii, err := einvoice.Generate(einvoice.Invoice{Document: d}, einvoice.CII)
		require.NoError(t, err)
		pdf, err := einvoice.Generate(einvoice.Invoice{Document: d}, einvoice.FacturX)
		require.NoError(t, err)
		again, err := document.FacturX(d, cii)
		require.NoError(t, err)
		require.Equal(t, pdf, again, "byte-deterministic")
		path := filepath.Join(dir, d.Number+".pdf")
		require.NoError(t, os.WriteFile(path, pdf, 0o600))

		out, err := exec.Command(qpdf, "--check", path).CombinedOutput()
		require.NoError(t, err, "qpdf --check: %s", out)
		require.Contains(t, string(out), "No syntax or stream encoding errors found")

		out, err = exec.Command(pdfdetach, "-list", path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "1 embedded files\n1: factur-x.xml\n", string(out))
		xml := filepath.Join(dir, d.Number+".factur-x.xml")
		out, err = exec.Command(pdfdetach, "-save", "1", "-o", xml, path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		got, err := os.ReadFile(xml)
		require.NoError(t, err)
		require.Equal(t, cii, got)
		extracted = append(extracted, xml)

		// The catalog's /AF names the file specification, which says
		// how the file relates to the PDF; the XML is text/xml.
		out, err = exec.Command(qpdf, "--show-object=trailer", "--filtered-stream-data", path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		root := regexp.MustCompile(`/Root (\d+) 0 R`).FindStringSubmatch(string(out))
		require.NotNil(t, root, "%s", out)
		require.Contains(t, string(out), "/ID [")
		catalog := showObject(t, qpdf, path, root[1])
		af := regexp.MustCompile(`/AF \[ (\d+) 0 R \]`).FindStringSubmatch(catalog)
		require.NotNil(t, af, "%s", catalog)
		require.Contains(t, catalog, "/OutputIntents")
		spec := showObject(t, qpdf, path, af[1])
		require.Contains(t, spec, "/AFRelationship /Alternative")
		require.Contains(t, spec, "/UF (factur-x.xml)")
		file := regexp.MustCompile(`/EF << /F (\d+) 0 R`).FindStringSubmatch(spec)
		require.NotNil(t, file, "%s", spec)
		require.Contains(t, showObject(t, qpdf, path, file[1]), "/Subtype /text#2fxml")

		meta := xmpOf(t, qpdf, path, catalog)
		for _, want := range []string{
			"<pdfaid:part>3</pdfaid:part>", "<pdfaid:conformance>B</pdfaid:conformance>",
			`xmlns:fx="urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#"`,
			"<fx:DocumentType>INVOICE</fx:DocumentType>", "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>",
			"<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>", "<fx:Version>1.0</fx:Version>",
			"<pdfaSchema:prefix>fx</pdfaSchema:prefix>",
			"<pdfaSchema:namespaceURI>urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#</pdfaSchema:namespaceURI>",
		} {
			require.Contains(t, meta, want)
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err = exec.CommandContext(ctx, node, filepath.Join(reader, "read.mjs"), path).Output()
		cancel()
		require.NoError(t, err, "factur-x-kit: %s", stderr(err))
		var read struct{ Profile, Number, Type, Total string }
		require.NoError(t, json.Unmarshal(out, &read), "%s", out)
		require.Equal(t, "urn:cen.eu:en16931:2017", read.Profile, "%s", out)
		require.Equal(t, d.Number, read.Number, "%s", out)
		require.Equal(t, map[document.Kind]string{document.KindInvoice: "380", document.KindCreditNote: "381"}[d.Kind], read.Type, "%s", out)
		require.Equal(t, jsNumber(d.Total), read.Total, "%s", out)
	}
	validate(t, extracted)
}

// validate runs the EN 16931 artefacts (rules and CII schema) over files
// and fails on any fatal rule.
func validate(t *testing.T, files []string) {
	t.Helper()
	dir, err := en16931.Dir()
	require.NoError(t, err)
	out, err := exec.Command(filepath.Join(dir, "validate"), files...).CombinedOutput()
	require.NoError(t, err, "validate: %s", out)
	require.NotContains(t, string(out), "[fatal]", "%s", out)
}

func showObject(t *testing.T, qpdf, path, n string) string {
	t.Helper()
	out, err := exec.Command(qpdf, "--show-object="+n, path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// xmpOf is the XMP packet the catalog's /Metadata names.
func xmpOf(t *testing.T, qpdf, path, catalog string) string {
	t.Helper()
	m := regexp.MustCompile(`/Metadata (\d+) 0 R`).FindStringSubmatch(catalog)
	require.NotNil(t, m, "%s", catalog)
	out, err := exec.Command(qpdf, "--show-object="+m[1], "--filtered-stream-data", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.True(t, bytes.HasPrefix(out, []byte("<?xpacket begin=")), "%s", out)
	return string(out)
}

// jsNumber is minor units of a two-decimal currency as JavaScript
// prints the number: 94600 is "946", 5350 "53.5".
func jsNumber(minor int64) string {
	s := strconv.FormatInt(minor/100, 10) + "." + fmt.Sprintf("%02d", minor%100)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

func stderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
