package invoices_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

// corpusCustomer is a customer of the corpus as the API takes it.
type corpusCustomer struct {
	name, currency, language, vatID, taxNumber string
	address                                    party.Address
}

// corpusInvoice is one invoice of the corpus: its customer, its draft's
// members besides customer_id, and the words its document must carry
// beyond what every invoice's must.
type corpusInvoice struct {
	name     string
	customer corpusCustomer
	draft    map[string]any
	words    []string
}

// Done when (issue 39): a corpus of invoices created through the API,
// one for each VAT category and case a business meets, renders PDFs in
// which pdftotext finds every item Article 226 of Directive 2006/112/EC
// requires, in the customer's language: both parties' names, addresses
// and VAT ids, the number, the issue date, the date of supply or the
// period, each line's quantity with its unit, description and unit price,
// the net and VAT per category and rate with the rate, the exemption or
// reverse-charge wording, the payment terms, the due date and the bank
// details.
func TestInvoiceCorpusCarriesArticle226(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	berlin := party.Address{Lines: []string{"Alexanderplatz 1"}, Postcode: "10178", City: "Berlin", Country: "DE"}
	paris := party.Address{Lines: []string{"12 rue de Rivoli"}, Postcode: "75004", City: "Paris", Country: "FR"}
	vienna := party.Address{Lines: []string{"Stephansplatz 3"}, Postcode: "1010", City: "Wien", Country: "AT"}
	amsterdam := party.Address{Lines: []string{"Damrak 70"}, Postcode: "1012 LM", City: "Amsterdam", Country: "NL"}
	zurich := party.Address{Lines: []string{"Bahnhofstrasse 1"}, Postcode: "8001", City: "Zürich", Country: "CH"}
	london := party.Address{Lines: []string{"1 Poultry"}, Postcode: "EC2R 8EJ", City: "London", Country: "GB"}
	tokyo := party.Address{Lines: []string{"1-1 Marunouchi", "Chiyoda-ku"}, Postcode: "100-0005", City: "Tokyo", Country: "JP"}
	laspalmas := party.Address{Lines: []string{"Calle Mayor de Triana 1"}, Postcode: "35002", City: "Las Palmas", Subdivision: "Canarias", Country: "ES"}
	ceuta := party.Address{Lines: []string{"Calle Real 1"}, Postcode: "51001", City: "Ceuta", Country: "ES"}
	line := func(desc string, qty any, unit string, price, bps int64, cat vat.Category) map[string]any {
		l := map[string]any{"description": desc, "quantity": qty, "unit": unit, "unit_amount": price, "tax_rate_bps": bps}
		if cat != "" {
			l["vat_category"] = cat
		}
		return l
	}
	today := time.Now().UTC()
	period := map[string]any{"start": today.AddDate(0, -1, 0).Format(time.DateOnly), "end": today.AddDate(0, 0, -1).Format(time.DateOnly)}
	supplied := today.AddDate(0, 0, -3).Format(time.DateOnly)

	corpus := []corpusInvoice{
		{"standard rate, English, a UK buyer", corpusCustomer{name: "Thames Trading Ltd", currency: "GBP", language: "en", vatID: "GB980780684", address: london},
			map[string]any{"supply_date": supplied, "lines": []any{line("Consulting", "3", "DAY", 95000, 2000, "")}}, nil},
		{"two rates, German", corpusCustomer{name: "Bäckerei Müller GmbH", currency: "EUR", language: "de", vatID: "DE136695976", address: berlin},
			map[string]any{"service_period": period, "payment_terms_days": 30, "purchase_order": "PO-2026-17", "buyer_reference": "04011000-12345-67",
				"lines": []any{line("Software-Lizenz", "1", "C62", 120000, 1900, ""), line("Fachbuch", "2", "H87", 4990, 700, "")}},
			[]string{"PO-2026-17", "04011000-12345-67"}},
		{"zero rated", corpusCustomer{name: "Kinderbuch Verlag", currency: "EUR", language: "en", vatID: "DE136695976", address: berlin},
			map[string]any{"supply_date": supplied, "lines": []any{line("Children's books", "40", "H87", 1250, 0, vat.ZeroRated)}}, nil},
		{"exempt, French", corpusCustomer{name: "Clinique du Marais", currency: "EUR", language: "fr", vatID: "FR44732829320", address: paris},
			map[string]any{"supply_date": supplied, "lines": []any{withLine(line("Formation médicale", "7.5", "HUR", 18000, 0, vat.Exempt),
				"exemption_reason", "Exonération, article 261-4-4° du CGI")}}, []string{"Exonération, article 261-4-4° du CGI"}},
		{"reverse charge to France, in French", corpusCustomer{name: "Atelier Lumière SARL", currency: "EUR", language: "fr", vatID: "FR44732829320", address: paris},
			map[string]any{"service_period": period, "lines": []any{line("Développement logiciel", "12.5", "HUR", 11000, 0, vat.ReverseCharge)}}, nil},
		{"reverse charge to Austria, in German", corpusCustomer{name: "Wiener Werkstätten GmbH", currency: "EUR", language: "de", vatID: "ATU13585627", address: vienna},
			map[string]any{"service_period": period, "lines": []any{line("Beratung", "16", "HUR", 13500, 0, vat.ReverseCharge)}}, nil},
		{"intra-community supply to the Netherlands", corpusCustomer{name: "Dam Distributie BV", currency: "EUR", language: "en", vatID: "NL004495445B01", address: amsterdam},
			map[string]any{"supply_date": supplied, "lines": []any{line("Machine parts", "0.125", "TNE", 2400000, 0, vat.IntraCommunity)}}, nil},
		{"export to Switzerland", corpusCustomer{name: "Alpen Instrumente AG", currency: "CHF", language: "de", vatID: "CHE107787577MWST", address: zurich},
			map[string]any{"supply_date": supplied, "lines": []any{line("Messgeräte", "4", "H87", 89000, 0, vat.Export)}}, nil},
		{"outside the scope of VAT", corpusCustomer{name: "Charity Trust", currency: "EUR", language: "en", address: london},
			map[string]any{"supply_date": supplied, "lines": []any{line("Donation receipt handling", "1", "LS", 50000, 0, vat.OutsideScope)}}, nil},
		{"Canary Islands IGIC", corpusCustomer{name: "Islas Suministros SL", currency: "EUR", language: "en", vatID: "ESB12345674", address: laspalmas},
			map[string]any{"supply_date": supplied, "lines": []any{line("Installation", "2", "DAY", 60000, 700, vat.CanaryIslands)}}, nil},
		{"Ceuta IPSI", corpusCustomer{name: "Ceuta Comercio SL", currency: "EUR", language: "en", taxNumber: "B51000001", address: ceuta},
			map[string]any{"supply_date": supplied, "lines": []any{line("Supplies", "10", "KGM", 2500, 400, vat.CeutaMelilla)}}, nil},
		{"decimal quantities and units over a period, French", corpusCustomer{name: "Épicerie Fine Dupont", currency: "EUR", language: "fr", vatID: "FR44732829320", address: paris},
			map[string]any{"service_period": period, "payment_terms_days": 14,
				"lines": []any{line("Safran", "0.125", "KGM", 999999, 550, ""), line("Conseil", "7.5", "HUR", 9000, 2000, ""), line("Livraison", "1", "LS", 1500, 2000, "")}}, nil},
		{"yen", corpusCustomer{name: "Marunouchi Trading KK", currency: "JPY", language: "en", address: tokyo},
			map[string]any{"supply_date": supplied, "lines": []any{line("Licence", "3", "C62", 1500, 0, vat.Export)}}, nil},
		{"standard and reverse charge, German", corpusCustomer{name: "Grenzland Handel GmbH", currency: "EUR", language: "de", vatID: "ATU13585627", address: vienna},
			map[string]any{"supply_date": supplied, "lines": []any{line("Wartung", "3.25", "HUR", 12000, 0, vat.ReverseCharge), line("Ersatzteile", "5", "H87", 2999, 0, vat.ReverseCharge)}}, nil},
	}
	require.GreaterOrEqual(t, len(corpus), 12)
	seller := invoicetest.DefaultSeller
	for _, tc := range corpus {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.customer
			r := b.h.Do(t, http.MethodPost, "/v1/customers", b.clerk, map[string]any{"name": c.name, "currency": c.currency, "language": c.language,
				"vat_id": c.vatID, "tax_number": c.taxNumber, "email": "billing@example.com", "address": c.address})
			require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
			var cu invoices.Customer
			r.JSON(t, &cu)
			// Terms unless the case gives its own: every document of the
			// corpus states a due date.
			body := map[string]any{"customer_id": cu.ID, "payment_terms_days": 21}
			for k, v := range tc.draft {
				body[k] = v
			}
			r = b.h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, body)
			require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
			var draft invoices.Invoice
			r.JSON(t, &draft)
			path := "/v1/invoices/" + draft.ID.String()
			p := requireProblem(t, b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
			b.approve(t, p["approval_id"].(string))
			r = b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			var inv invoices.Invoice
			r.JSON(t, &inv)
			r = b.h.Do(t, http.MethodGet, path+"/pdf", b.clerk, nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			text := documenttest.Text(t, r.Body)

			lang := document.Language(c.language)
			want := []string{
				// The seller: name, address, VAT id, bank details.
				seller.LegalName, seller.Address.Lines[0], seller.Address.Postcode + " " + seller.Address.City,
				lang.Country(seller.Address.Country), string(seller.VATID),
				seller.BankAccounts[0].IBAN.String(), string(seller.BankAccounts[0].BIC),
				// The buyer: name, address, VAT id or tax number.
				c.name, c.address.Lines[0], lang.Country(c.address.Country),
				// The invoice: number, dates.
				*inv.Number, lang.Date(inv.IssuedAt.UTC()), lang.Date(inv.DueDate.Time),
			}
			want = append(want, strings.TrimSpace(c.address.Postcode+" "+c.address.City))
			if c.vatID != "" {
				want = append(want, c.vatID)
			}
			if c.taxNumber != "" {
				want = append(want, c.taxNumber)
			}
			switch {
			case inv.SupplyDate != nil:
				want = append(want, lang.Date(inv.SupplyDate.Time))
			case inv.ServicePeriod != nil:
				want = append(want, lang.Period(inv.ServicePeriod.Start.Time, inv.ServicePeriod.End.Time))
			default:
				t.Fatal("every invoice of the corpus states its supply")
			}
			for _, l := range inv.Lines {
				want = append(want, l.Description, lang.Quantity(l.Quantity)+" "+lang.Unit(l.Unit, l.Quantity),
					lang.Amount(l.UnitAmount, inv.Currency), lang.Amount(l.Amount, inv.Currency))
			}
			for _, g := range inv.VATBreakdown {
				want = append(want, lang.Amount(g.TaxableAmount, inv.Currency), lang.Amount(g.TaxAmount, inv.Currency), g.Category.Name(string(lang)))
				if g.Category == vat.Standard || g.Category == vat.CanaryIslands || g.Category == vat.CeutaMelilla {
					want = append(want, lang.Percent(g.RateBPS))
				}
				if w := vat.Wording(g.Category, string(lang)); w != "" {
					want = append(want, w)
				}
			}
			want = append(want, lang.Money(inv.Total, inv.Currency))
			want = append(want, tc.words...)
			for _, w := range want {
				// pdftotext reads a no-break space (French thousands) as a space.
				documenttest.RequireText(t, text, strings.ReplaceAll(w, "\u00a0", " "))
			}
		})
	}
}
