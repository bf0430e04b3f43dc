package invoices_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/internal/debtest"
	"github.com/invoiced/invoiced/internal/en16931"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/seller"
	"github.com/stretchr/testify/require"
)

// einvoiceSeller is a seller every format can name: XRechnung asks for
// its contact's telephone number besides the default seller's facts.
func einvoiceSeller() seller.Details {
	d := invoicetest.DefaultSeller
	d.TradingName = "Nordlicht"
	d.Contact.Phone = "+49 30 1234567"
	return d
}

// einvoiceCase is one issued invoice of the corpus, the formats asked of
// it, and the credit notes issued against it (each asked in the same
// formats).
type einvoiceCase struct {
	name     string
	customer map[string]any
	draft    map[string]any
	formats  []einvoice.Format
	credits  []map[string]any
}

// validation is one failed rule the validator printed: file, rule, flag.
type validation struct{ file, rule, flag, text string }

var validationLine = regexp.MustCompile(`^(.+\.xml): (\S+) \[(\w+)\] (.*)$`)

// validateEN16931 runs the CEN's artefacts (INVOICED_EN16931_DIR) over
// files in ONE run of their validate script, with the XRechnung rules,
// and returns every failed rule; anything else it prints (the CII
// schema's errors) fails the test.
func validateEN16931(t *testing.T, files []string) []validation {
	t.Helper()
	dir, err := en16931.Dir()
	require.NoError(t, err, "the EN 16931 artefacts validate the e-invoices")
	debtest.Command(t, "java", "default-jre-headless")
	debtest.Command(t, "xmllint", "libxml2-utils")
	cmd := exec.Command(filepath.Join(dir, "validate"), append([]string{"--xrechnung"}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("%s/validate: %v: %s%s", dir, err, out, stderr.Bytes())
	}
	var failed []validation
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := validationLine.FindStringSubmatch(line); m != nil {
			failed = append(failed, validation{file: m[1], rule: m[2], flag: m[3], text: m[4]})
			continue
		}
		require.True(t, strings.HasPrefix(line, "validate: "), "the validator printed more than failed rules (the CII schema?): %s", line)
	}
	require.NoError(t, sc.Err())
	return failed
}

// xrechnungRule: the German CIUS's rules, which judge the XRechnung
// documents alone (the validator runs them over every file it is given).
func xrechnungRule(id string) bool {
	return strings.HasPrefix(id, "BR-DE") || strings.HasPrefix(id, "BR-DEX") || strings.HasPrefix(id, "BR-TMP")
}

// Done when (issue 41): a corpus of e-invoices, generated through the API
// from issued invoices and credit notes (every VAT category, reverse
// charge, intra-community supply, export, several rates, decimal
// quantities and units, a service period, JPY, long and Unicode texts,
// names with & < > " ', credit notes full and partial) is judged in one
// run of the CEN's EN 16931 validation artefacts, with XRechnung's rules
// for the XRechnung documents: no fatal rule fails, and the CII
// documents pass their schema. Each document states its number and total
// as the invoice does, and the same request gives the same bytes and
// ETag.
func TestEInvoiceCorpusValidates(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	h := b.h
	invoicetest.Seller(b.ctx, t, h.Pool, einvoiceSeller())

	berlin := party.Address{Lines: []string{"Alexanderplatz 1"}, Postcode: "10178", City: "Berlin", Country: "DE"}
	paris := party.Address{Lines: []string{"12 rue de Rivoli"}, Postcode: "75004", City: "Paris", Country: "FR"}
	vienna := party.Address{Lines: []string{"Stephansplatz 3"}, Postcode: "1010", City: "Wien", Country: "AT"}
	amsterdam := party.Address{Lines: []string{"Damrak 70", "4e verdieping"}, Postcode: "1012 LM", City: "Amsterdam", Country: "NL"}
	zurich := party.Address{Lines: []string{"Bahnhofstrasse 1"}, Postcode: "8001", City: "Zürich", Country: "CH"}
	london := party.Address{Lines: []string{"1 Poultry"}, Postcode: "EC2R 8EJ", City: "London", Country: "GB"}
	tokyo := party.Address{Lines: []string{"1-1 Marunouchi", "Chiyoda-ku", "Building 3"}, Postcode: "100-0005", City: "Tokyo", Country: "JP"}
	laspalmas := party.Address{Lines: []string{"Calle Mayor de Triana 1"}, Postcode: "35002", City: "Las Palmas", Subdivision: "Canarias", Country: "ES"}
	ceuta := party.Address{Lines: []string{"Calle Real 1"}, Postcode: "51001", City: "Ceuta", Country: "ES"}
	customer := func(name, currency, lang, vatID string, a party.Address, format einvoice.Format, extra ...any) map[string]any {
		c := map[string]any{"name": name, "currency": currency, "language": lang, "vat_id": vatID, "email": "ap@buyer.example",
			"address": a, "einvoice_format": format}
		for i := 0; i < len(extra); i += 2 {
			c[extra[i].(string)] = extra[i+1]
		}
		return c
	}
	line := func(desc, qty, unit string, price, bps int64, cat string) map[string]any {
		return map[string]any{"description": desc, "quantity": qty, "unit": unit, "unit_amount": price, "tax_rate_bps": bps, "vat_category": cat}
	}
	today := time.Now().UTC()
	period := map[string]any{"start": today.AddDate(0, -1, 0).Format(time.DateOnly), "end": today.AddDate(0, 0, -1).Format(time.DateOnly)}
	supplied := today.AddDate(0, 0, -3).Format(time.DateOnly)
	long := strings.Repeat("Wartung und Weiterentwicklung der Plattform „Ελληνικά · 日本語 · Ünïcödé“, einschließlich Betrieb & <Überwachung> \"24/7\" – ", 8)
	long = strings.TrimSpace(long[:990])
	core := []einvoice.Format{einvoice.UBL, einvoice.CII}
	xr := []einvoice.Format{einvoice.XRechnungUBL, einvoice.XRechnungCII, einvoice.UBL, einvoice.CII}
	full := map[string]any{"reason": "Leistung storniert", "amount": nil}

	corpus := []einvoiceCase{
		{"XRechnung to a public buyer, two rates over a period",
			customer("Landeshauptstadt München – Referat für Arbeit & Wirtschaft", "EUR", "de", "DE129273398", berlin, einvoice.XRechnungCII,
				"buyer_reference", "04011000-12345-67"),
			map[string]any{"service_period": period, "purchase_order": "PO-2026-17",
				"lines": []any{line("Software-Lizenz", "1", "C62", 120000, 1900, "S"), line("Fachbuch", "2", "H87", 4990, 700, "S")}},
			xr, []map[string]any{full}},
		{"Peppol, reverse charge to the Netherlands",
			customer("Dam Distributie BV", "EUR", "en", "NL004495445B01", amsterdam, einvoice.Peppol, "peppol_id", "0106:12345678", "buyer_reference", "DAM-REF-9"),
			map[string]any{"service_period": period, "lines": []any{line("Software development", "12.5", "HUR", 11000, 0, "AE")}},
			[]einvoice.Format{einvoice.Peppol, einvoice.UBL, einvoice.CII}, nil},
		{"zero rated to the UK", customer("Thames Trading Ltd", "GBP", "en", "GB980780684", london, einvoice.UBL),
			map[string]any{"supply_date": supplied, "lines": []any{line("Children's books", "40", "H87", 1250, 0, "Z")}}, core, nil},
		{"exempt, French", customer("Clinique du Marais", "EUR", "fr", "FR44732829320", paris, einvoice.CII),
			map[string]any{"supply_date": supplied, "lines": []any{withLine(line("Formation médicale", "7.5", "HUR", 18000, 0, "E"),
				"exemption_reason", "Exonération, article 261-4-4° du CGI")}}, core, nil},
		{"reverse charge to Austria, German", customer("Wiener Werkstätten GmbH", "EUR", "de", "ATU13585627", vienna, einvoice.UBL),
			map[string]any{"service_period": period, "lines": []any{line("Beratung", "16", "HUR", 13500, 0, "AE")}}, core, nil},
		{"intra-community supply of goods to the Netherlands",
			customer("Dam Goederen BV", "EUR", "en", "NL004495445B01", amsterdam, einvoice.Peppol, "peppol_id", "9944:NL004495445B01"),
			map[string]any{"supply_date": supplied, "purchase_order": "NL-PO-77",
				"lines": []any{line("Machine parts", "0.125", "TNE", 2400000, 0, "K"), line("Spare belts", "3", "H87", 4500, 0, "K")}},
			[]einvoice.Format{einvoice.Peppol, einvoice.UBL, einvoice.CII},
			[]map[string]any{{"reason": "Ein Keilriemen kam beschädigt an", "lines": []any{map[string]any{"position": 1, "quantity": "1"}}}}},
		{"export to Switzerland in francs", customer("Alpen Instrumente AG", "CHF", "de", "CHE107787577MWST", zurich, einvoice.None),
			map[string]any{"supply_date": supplied, "lines": []any{line("Messgeräte", "4", "H87", 89000, 0, "G")}}, core, nil},
		{"outside the scope of VAT", customer("Charity Trust", "EUR", "en", "", london, einvoice.None),
			map[string]any{"supply_date": supplied, "lines": []any{line("Donation receipt handling", "1", "LS", 50000, 0, "O")}}, core, nil},
		{"Canary Islands IGIC", customer("Islas Suministros SL", "EUR", "en", "ESB12345674", laspalmas, einvoice.None),
			map[string]any{"supply_date": supplied, "lines": []any{line("Installation", "2", "DAY", 60000, 700, "L")}}, core, nil},
		{"Ceuta IPSI", customer("Ceuta Comercio SL", "EUR", "en", "", ceuta, einvoice.None, "tax_number", "B51000001"),
			map[string]any{"supply_date": supplied, "lines": []any{line("Supplies", "10", "KGM", 2500, 400, "M")}}, core, nil},
		{"yen", customer("Marunouchi Trading KK", "JPY", "en", "", tokyo, einvoice.CII),
			map[string]any{"supply_date": supplied, "lines": []any{line("Licence", "3", "C62", 1500, 0, "G"), line("Support", "0.75", "HUR", 1234, 0, "G")}}, core, nil},
		{"long Unicode texts, names with & < > \" '",
			customer(`O'Brien & <Söhne> "Ελληνικά" 日本`, "EUR", "de", "DE136308783", berlin, einvoice.XRechnungUBL,
				"buyer_reference", `991-<&>-"'`),
			map[string]any{"supply_date": supplied, "memo": "Vielen Dank!\nRückfragen: <billing@nordlicht.example> & \"Ada\" 'B'",
				"lines": []any{line(long, "1", "MON", 250000, 1900, "S"), line("Ümlaut & <Klammern> \"Zitat\" 'Apostroph'", "2.5", "HUR", 9999, 1900, "S")}},
			xr, []map[string]any{{"reason": "Teilgutschrift: „Klammern“ & <Zitat>", "lines": []any{map[string]any{"position": 1, "quantity": "1.25"}}}}},
		{"several rates and categories, decimal quantities and units",
			customer("Épicerie Fine Dupont", "EUR", "fr", "FR44732829320", paris, einvoice.UBL),
			map[string]any{"service_period": period, "payment_terms_days": 14,
				"lines": []any{line("Safran", "0.125", "KGM", 999999, 550, "S"), line("Conseil", "7.5", "HUR", 9000, 2000, "S"),
					line("Livraison", "1", "LS", 1500, 2000, "S"), line("Livres", "3", "H87", 2500, 0, "Z"),
					withLine(line("Assurance", "1", "C62", 4000, 0, "E"), "exemption_reason", "Exonération, article 261 C du CGI")}},
			core, []map[string]any{{"reason": "Geste commercial", "amount": 5000}}},
	}
	dir := t.TempDir()
	var files []string
	xrFiles := map[string]bool{}
	write := func(kind, path string, number string, total int64, currency string, formats []einvoice.Format) {
		exp, _ := money.Exponent(currency)
		for _, f := range formats {
			r := get(t, h, path+"/einvoice?format="+string(f), b.clerk, http.StatusOK)
			require.Equal(t, "application/xml", r.Header.Get("Content-Type"))
			require.NotEmpty(t, r.Header.Get("ETag"))
			require.Contains(t, r.Header.Get("Content-Disposition"), einvoice.FileName(number, f))
			require.Contains(t, string(r.Body), ">"+number+"<", "%s %s states its number", kind, f)
			require.Contains(t, string(r.Body), ">"+decimalOf(total, exp)+"<", "%s %s states its total", kind, f)
			if f == einvoice.Peppol {
				require.Regexp(t, `<cbc:BuyerReference>|<cac:OrderReference>`, string(r.Body), "%s: Peppol asks a buyer or order reference (PEPPOL-EN16931-R003)", kind)
			}
			again := get(t, h, path+"/einvoice?format="+string(f), b.clerk, http.StatusOK)
			require.Equal(t, r.Body, again.Body, "the same document gives the same bytes")
			require.Equal(t, r.Header.Get("ETag"), again.Header.Get("ETag"))
			file := filepath.Join(dir, fmt.Sprintf("%02d-%s.%s.xml", len(files), number, f))
			require.NoError(t, os.WriteFile(file, r.Body, 0o600))
			files = append(files, file)
			xrFiles[file] = f.XRechnung()
		}
	}
	for _, tc := range corpus {
		r := h.Do(t, http.MethodPost, "/v1/customers", b.clerk, tc.customer)
		require.Equal(t, http.StatusCreated, r.StatusCode, "%s: %s", tc.name, r.Body)
		var cu invoices.Customer
		r.JSON(t, &cu)
		body := map[string]any{"customer_id": cu.ID, "payment_terms_days": 21}
		for k, v := range tc.draft {
			body[k] = v
		}
		r = h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, body)
		require.Equal(t, http.StatusCreated, r.StatusCode, "%s: %s", tc.name, r.Body)
		var draft invoices.Invoice
		r.JSON(t, &draft)
		path := "/v1/invoices/" + draft.ID.String()
		requireProblem(t, h.Do(t, http.MethodGet, path+"/einvoice?format=cii", b.clerk, nil), http.StatusConflict, invoices.CodeNotIssued)
		p := requireProblem(t, h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
		b.approve(t, p["approval_id"].(string))
		r = h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s: %s", tc.name, r.Body)
		var inv invoices.Invoice
		r.JSON(t, &inv)
		write(tc.name, path, *inv.Number, inv.Total, inv.Currency, tc.formats)
		for _, credit := range tc.credits {
			if _, ok := credit["amount"]; ok && credit["amount"] == nil {
				credit["amount"] = inv.Total
			}
			cn := b.credit(t, inv.ID.String(), credit)
			write(tc.name+", credit note", "/v1/credit-notes/"+cn.ID.String(), cn.Number, cn.Total, inv.Currency, tc.formats)
		}
	}
	require.GreaterOrEqual(t, len(files), 40)

	fatal := 0
	for _, v := range validateEN16931(t, files) {
		if v.flag != "fatal" || (xrechnungRule(v.rule) && !xrFiles[v.file]) {
			continue
		}
		fatal++
		doc, _ := os.ReadFile(v.file)
		t.Errorf("%s: %s [%s] %s\n%s", filepath.Base(v.file), v.rule, v.flag, v.text, doc)
	}
	require.Zero(t, fatal, "fatal rules failed over %d documents", len(files))
}

// decimalOf writes minor units as the e-invoice does.
func decimalOf(n int64, exp int) string {
	if exp == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d.%02d", n/100, n%100)
}
