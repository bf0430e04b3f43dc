// Package einvoice writes issued invoices and credit notes as EN 16931
// e-invoices: UBL 2.1 (the CEN's core, Peppol BIS Billing 3.0 and
// XRechnung 3.0 customizations) and UN/CEFACT CII D16B (the core, which
// Factur-X embeds, and XRechnung). It reads the same document.Document
// the PDF is drawn from, built from the frozen invoice or credit note, so
// that the XML and the PDF state the same facts; the same document gives
// the same bytes.
//
// The business terms (BT-…, BG-…) are EN 16931-1's; each is written where
// the syntax binding of EN 16931-3 puts it, and those the service does
// not hold are left out.
package einvoice

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
)

// Format is an e-invoice format a customer may ask for.
type Format string

// The formats. FacturX is a PDF/A-3 with the CII embedded; it is written
// by the package that writes PDFs, from CII's bytes.
const (
	UBL          Format = "ubl"
	CII          Format = "cii"
	XRechnungUBL Format = "xrechnung-ubl"
	XRechnungCII Format = "xrechnung-cii"
	Peppol       Format = "peppol"
	FacturX      Format = "facturx"
)

// None is a customer's format when it takes no e-invoice: the PDF alone.
// It is no format: Generate and ParseFormat refuse it.
const None Format = "none"

// formats lists every format, in the order the API documents them.
var formats = []Format{UBL, CII, XRechnungUBL, XRechnungCII, Peppol, FacturX}

// Formats returns every format.
func Formats() []Format { return slices.Clone(formats) }

// CodeUnknownFormat is the 422 problem code of a format that is not one.
const CodeUnknownFormat = "EINVOICE_FORMAT_UNKNOWN"

// ParseFormat returns s as a format, or a 422 naming field and the
// formats there are.
func ParseFormat(field, s string) (Format, error) {
	f := Format(s)
	if !slices.Contains(formats, f) {
		names := make([]string, len(formats))
		for i, f := range formats {
			names[i] = string(f)
		}
		e := problem.New(http.StatusUnprocessableEntity, CodeUnknownFormat,
			fmt.Sprintf("%q is not an e-invoice format: use one of %s", s, strings.Join(names, ", ")))
		e.Errors = []problem.FieldError{{Field: field, Code: CodeUnknownFormat, Message: "must be one of " + strings.Join(names, ", ")}}
		return "", e
	}
	return f, nil
}

// XRechnung reports whether f is one of XRechnung's syntaxes: the
// German CIUS, whose rules (BR-DE-*) ask more of an invoice.
func (f Format) XRechnung() bool { return f == XRechnungUBL || f == XRechnungCII }

// ContentType is the media type of f's document.
func (f Format) ContentType() string {
	if f == FacturX {
		return "application/pdf"
	}
	return "application/xml"
}

// Specification identifiers (BT-24) and the business process (BT-23).
const (
	specCore      = "urn:cen.eu:en16931:2017"
	specPeppol    = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
	specXRechnung = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
	// processPeppol is Peppol's billing process, which XRechnung's
	// examples state too.
	processPeppol = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
)

// Invoice is what an e-invoice states: the document of the issued
// invoice or credit note (document.Document, as the PDF shows it, with
// the seller's bank accounts whatever its status: the e-invoice is the
// invoice as issued) and the buyer's electronic address.
type Invoice struct {
	*document.Document
	// BuyerEndpoint is where the buyer receives e-invoices (BT-49): its
	// Peppol participant id, or its email (scheme EM); zero for none.
	BuyerEndpoint Endpoint
}

// Endpoint is an electronic address (BT-34, BT-49): a scheme of the CEF
// Electronic Address Scheme list (0088 GLN, 9930 German VAT number, EM an
// email address, …) and the identifier under it.
type Endpoint struct {
	Scheme string
	ID     string
}

// IsZero reports whether e is no address.
func (e Endpoint) IsZero() bool { return e.ID == "" }

// String is e as Peppol writes a participant id: "0088:4035811991021".
func (e Endpoint) String() string {
	if e.IsZero() {
		return ""
	}
	return e.Scheme + ":" + e.ID
}

// EmailEndpoint is the electronic address of an email address.
func EmailEndpoint(email string) Endpoint {
	if email == "" {
		return Endpoint{}
	}
	return Endpoint{Scheme: "EM", ID: email}
}

// maxEndpointID bounds an identifier: Peppol's participant ids have at
// most 50 characters after the scheme; an email address 254.
const maxEndpointID = 254

// ParseEndpoint reads "scheme:identifier" (a Peppol participant id such
// as 0088:4035811991021 or 9930:DE136695976), refusing a scheme outside
// the EAS list (EN 16931 BR-CL-25) with a 422 naming field.
func ParseEndpoint(field, s string) (Endpoint, error) {
	scheme, id, ok := strings.Cut(strings.TrimSpace(s), ":")
	scheme = strings.ToUpper(strings.TrimSpace(scheme))
	id = strings.TrimSpace(id)
	switch {
	case !ok || id == "":
		return Endpoint{}, problem.Invalid(field, "must be scheme:identifier, such as 0088:4035811991021 (a GLN) or 9930:DE136695976 (a German VAT number)")
	case !slices.Contains(easCodes, scheme):
		return Endpoint{}, problem.Invalid(field, "%q is not a scheme of the Electronic Address Scheme code list (EN 16931 BR-CL-25), such as 0088 (GLN), 0208 (Belgian enterprise number), 9930 (German VAT number)", scheme)
	case len(id) > maxEndpointID || strings.ContainsAny(id, " \t\r\n"):
		return Endpoint{}, problem.Invalid(field, "the identifier after the scheme must be at most %d characters without spaces", maxEndpointID)
	}
	return Endpoint{Scheme: scheme, ID: id}, nil
}

// easCodes is the CEF Electronic Address Scheme code list as the
// artefacts' BR-CL-25 accepts it (validation-1.3.16); a test compares the
// two.
var easCodes = strings.Fields(`0002 0007 0009 0037 0060 0088 0096 0097 0106 0130 0135 0142 0147 0151 0154 0158 0170
	0177 0183 0184 0188 0190 0191 0192 0193 0194 0195 0196 0198 0199 0200 0201 0202 0203 0204 0205 0208 0209 0210 0211
	0212 0213 0215 0216 0217 0218 0219 0220 0221 0225 0230 0235 0240 0244 0242 0245 0246 0248 9910 9913 9914 9915 9918
	9919 9920 9922 9923 9924 9925 9926 9927 9928 9929 9930 9931 9932 9933 9934 9935 9936 9937 9938 9939 9940 9941 9942
	9943 9944 9945 9946 9947 9948 9949 9950 9951 9952 9953 9957 9959 AN AQ AS AU EM`)

// vatSchemes are the EAS schemes whose identifier is a VAT number as the
// VAT prefix writes it: a seller with such a number is reachable under it.
var vatSchemes = map[string]string{
	"AT": "9914", "BE": "9925", "BG": "9926", "CH": "9927", "CY": "9928", "CZ": "9929", "DE": "9930", "EE": "9931",
	"GB": "9932", "EL": "9933", "HR": "9934", "IE": "9935", "LT": "9937", "LU": "9938", "LV": "9939", "MT": "9943",
	"NL": "9944", "PL": "9945", "PT": "9946", "RO": "9947", "SI": "9949", "SK": "9950", "FR": "9957", "HU": "9910", "ES": "9920",
}

// SellerEndpoint is the seller's electronic address (BT-34): its VAT
// number under its country's EAS scheme, else its contact's email (EM),
// else none.
func SellerEndpoint(vatID party.VATID, contactEmail string) Endpoint {
	if scheme, ok := vatSchemes[vatID.Prefix()]; ok {
		return Endpoint{Scheme: scheme, ID: string(vatID)}
	}
	return EmailEndpoint(contactEmail)
}

// CodeNotRepresentable is the 422 problem code of an invoice that EN
// 16931 cannot state as it is; the problem names the rule.
const CodeNotRepresentable = "EINVOICE_NOT_REPRESENTABLE"

// maxDecimals is what EN 16931 allows an amount (BR-DEC-01 to BR-DEC-28):
// two decimals.
const maxDecimals = 2

// CheckCurrency refuses a currency whose amounts EN 16931 cannot state:
// one with more than two decimals (the dinars, BHD, KWD, …: BR-DEC-09 and
// its siblings), whose amounts would have to be rounded, which an invoice
// must never be silently. field names it in the problem.
func CheckCurrency(field, currency string) error {
	exp, ok := money.Exponent(currency)
	if !ok {
		return problem.Invalid(field, "%q is not an ISO 4217 currency code", currency)
	}
	if exp > maxDecimals {
		e := problem.New(http.StatusUnprocessableEntity, CodeNotRepresentable, fmt.Sprintf(
			"%s amounts have %d decimals; an EN 16931 e-invoice allows at most %d (BR-DEC-09 for the sum of the lines, and BR-DEC-01 to BR-DEC-28 for every amount): it cannot be stated without rounding, so no e-invoice is written",
			currency, exp, maxDecimals))
		e.Errors = []problem.FieldError{{Field: field, Code: "BR-DEC-09", Message: fmt.Sprintf(
			"%s has %d decimals; EN 16931 amounts have at most %d", currency, exp, maxDecimals)}}
		return e
	}
	return nil
}

// Generate writes inv in format f: the XML formats, and Factur-X, the
// PDF (document.FacturX) with inv's CII inside. It refuses an invoice EN
// 16931 cannot state (CheckCurrency) and a draft, which is no invoice
// yet.
func Generate(inv Invoice, f Format) ([]byte, error) {
	if inv.Document == nil || inv.Number == "" || inv.IssueDate.IsZero() {
		return nil, fmt.Errorf("einvoice: only an issued invoice or credit note has an e-invoice")
	}
	if err := CheckCurrency("currency", inv.Currency); err != nil {
		return nil, err
	}
	v := newView(inv, f)
	switch f {
	case UBL, XRechnungUBL, Peppol:
		return writeUBL(v)
	case CII, XRechnungCII:
		return writeCII(v)
	case FacturX:
		cii, err := writeCII(newView(inv, CII))
		if err != nil {
			return nil, err
		}
		return document.FacturX(inv.Document, cii)
	}
	return nil, fmt.Errorf("einvoice: %q is not an XML format this package writes", f)
}

// FileName names f's document of inv: its number, and an extension
// telling the formats apart ("INV-2026-000001.xrechnung-ubl.xml").
func FileName(number string, f Format) string {
	if f == FacturX {
		return number + ".pdf"
	}
	return number + "." + string(f) + ".xml"
}

// EASCodes returns the Electronic Address Scheme codes an endpoint may
// use.
func EASCodes() []string { return slices.Clone(easCodes) }
