package document_test

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/document/documenttest"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// nordlicht is a German seller with every detail a document prints.
var nordlicht = document.Party{
	Name: "Nordlicht Consulting GmbH", TradingName: "Nordlicht",
	Address:   party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"},
	VATID:     "DE136695976",
	TaxNumber: "27/123/45678", Registration: "Amtsgericht Charlottenburg, HRB 12345 B",
	Contact: party.Contact{Name: "Jana Weiß", Phone: "+49 30 1234567", Email: "billing@nordlicht.example"},
}

// buyers are a customer in another member state for each language.
var buyers = map[document.Language]document.Party{
	document.English: {
		Name:    "Liffey Data Ltd",
		Address: party.Address{Lines: []string{"1 Grand Canal Square"}, Postcode: "D02 P820", City: "Dublin", Country: "IE"},
		VATID:   "IE6388047V", Email: "ap@liffey.example",
	},
	document.German: {
		Name:    "Bergmann Maschinenbau GmbH",
		Address: party.Address{Lines: []string{"Industriestraße 12"}, Postcode: "1010", City: "Wien", Country: "AT"},
		VATID:   "ATU13585627", TaxNumber: "12 345/6789", Email: "rechnung@bergmann.example",
	},
	document.French: {
		Name: "Atelier Lumière SARL",
		Address: party.Address{Lines: []string{"12 rue de la Paix", "Bâtiment B"}, Postcode: "75002", City: "Paris",
			Subdivision: "Île-de-France", Country: "FR"},
		VATID: "FR40303265045", Email: "factures@lumiere.example",
	},
}

// descriptions are the lines' descriptions, as the seller writes them for
// each customer: consulting, handbooks, hosting, a training exempt under
// Article 132(1)(i).
var descriptions = map[document.Language][5]string{
	document.English: {"Consulting", "Printed handbooks", "Cloud hosting", "Training material", "Exempt training under Article 132(1)(i)"},
	document.German:  {"Beratung", "Gedruckte Handbücher", "Cloud-Hosting", "Schulungsmaterial", "Steuerfreie Schulung nach § 4 Nr. 21 UStG"},
	document.French:  {"Conseil", "Manuels imprimés", "Hébergement cloud", "Matériel de formation", "Formation exonérée, article 261-4-4° du CGI"},
}

// article226 is an issued EUR invoice in lang with every item Article 226
// asks for: both parties' names, addresses and VAT ids, a service period,
// lines with decimal quantities and units at two rates, a reverse-charge
// line and an exempt one, terms and a bank account. 5,559.40 EUR net,
// 875.96 EUR VAT, 6,435.36 EUR in all.
func article226(lang document.Language) *document.Document {
	desc := descriptions[lang]
	balance, terms := int64(643536), 14
	return &document.Document{
		Kind: document.KindInvoice, Language: lang, ID: "0193a4c2-0000-7000-8000-000000000226", Number: "INV-2026-000042", Currency: "EUR",
		Seller: nordlicht, BillTo: buyers[lang],
		IssueDate: day(2026, 12, 6), ServicePeriod: document.Period{Start: day(2026, 11, 1), End: day(2026, 11, 30)}, DueDate: day(2026, 12, 20),
		PaymentTermsDays: &terms,
		BankAccounts:     []party.BankAccount{{IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}},
		PurchaseOrder:    "PO-4711", BuyerReference: "04011000-12345-67",
		Lines: []document.Line{
			{Description: desc[0], Quantity: 375000, Unit: "HUR", UnitAmount: 12000, VATCategory: vat.Standard, TaxRateBPS: 1900, Amount: 450000, TaxAmount: 85500},
			{Description: desc[1], Quantity: 12 * quantity.One, Unit: "C62", UnitAmount: 2495, VATCategory: vat.Standard, TaxRateBPS: 700, Amount: 29940, TaxAmount: 2096},
			{Description: desc[2], Quantity: 3 * quantity.One, Unit: "MON", UnitAmount: 25000, VATCategory: vat.ReverseCharge,
				ExemptionReason: "Reverse charge", ExemptionCode: "VATEX-EU-AE", Amount: 75000},
			{Description: desc[3], Quantity: 1250, Unit: "KGM", UnitAmount: 8000, VATCategory: vat.Exempt,
				ExemptionReason: desc[4], ExemptionCode: "VATEX-EU-132-1I", Amount: 1000},
		},
		Subtotal: 555940, TaxTotal: 87596, Total: 643536, Balance: &balance,
		Created: issued, Modified: issued,
	}
}

// item is one thing Article 226 of Directive 2006/112/EC requires of an
// invoice (its point), and the whole lines pdftotext reads for it in each
// language.
type item struct {
	point string
	lines map[document.Language][]string
}

// items are the Article 226 items article226 carries. Seller and buyer
// addresses print postcode before city; the country by its name in the
// document's language (CLDR, through x/text). French groups thousands with
// a no-break space, which pdftotext reads as a space.
var items = []item{
	{"(1) date of issue", map[document.Language][]string{
		document.English: {"Issue date 6 December 2026"},
		document.German:  {"Ausstellungsdatum 6. Dezember 2026"},
		document.French:  {"Date d'émission 6 décembre 2026"},
	}},
	{"(2) sequential number", map[document.Language][]string{
		document.English: {"Invoice", "Number INV-2026-000042"},
		document.German:  {"Rechnung", "Nummer INV-2026-000042"},
		document.French:  {"Facture", "Numéro INV-2026-000042"},
	}},
	{"(3) the supplier's VAT id", map[document.Language][]string{
		document.English: {"VAT ID: DE136695976", "Tax number: 27/123/45678"},
		document.German:  {"USt-IdNr.: DE136695976", "Steuernummer: 27/123/45678"},
		document.French:  {"N° TVA : DE136695976", "N° fiscal : 27/123/45678"},
	}},
	{"(4) the customer's VAT id", map[document.Language][]string{
		document.English: {"VAT ID: IE6388047V"},
		document.German:  {"USt-IdNr.: ATU13585627", "Steuernummer: 12 345/6789"},
		document.French:  {"N° TVA : FR40303265045"},
	}},
	{"(5) the supplier's full name and address", map[document.Language][]string{
		document.English: {"Nordlicht Consulting GmbH", "Trading as: Nordlicht", "Hauptstraße 5", "10115 Berlin", "Germany",
			"Registration: Amtsgericht Charlottenburg, HRB 12345 B", "Contact: Jana Weiß", "Phone: +49 30 1234567", "Email: billing@nordlicht.example"},
		document.German: {"Nordlicht Consulting GmbH", "Handelsname: Nordlicht", "Hauptstraße 5", "10115 Berlin", "Deutschland",
			"Registereintrag: Amtsgericht Charlottenburg, HRB 12345 B", "Kontakt: Jana Weiß", "Telefon: +49 30 1234567", "E-Mail: billing@nordlicht.example"},
		document.French: {"Nordlicht Consulting GmbH", "Nom commercial : Nordlicht", "Hauptstraße 5", "10115 Berlin", "Allemagne",
			"Immatriculation : Amtsgericht Charlottenburg, HRB 12345 B", "Contact : Jana Weiß", "Tél. : +49 30 1234567", "E-mail : billing@nordlicht.example"},
	}},
	{"(5) the customer's full name and address", map[document.Language][]string{
		document.English: {"Bill to", "Liffey Data Ltd", "1 Grand Canal Square", "D02 P820 Dublin", "Ireland", "Email: ap@liffey.example"},
		document.German:  {"Rechnungsempfänger", "Bergmann Maschinenbau GmbH", "Industriestraße 12", "1010 Wien", "Österreich", "E-Mail: rechnung@bergmann.example"},
		document.French: {"Facturé à", "Atelier Lumière SARL", "12 rue de la Paix", "Bâtiment B", "75002 Paris", "Île-de-France", "France",
			"E-mail : factures@lumiere.example"},
	}},
	{"(6) quantity and nature of the services; (8) unit price; (9) rate", map[document.Language][]string{
		document.English: {"Description Qty Unit Unit price VAT Net amount",
			"Consulting 37.5 hours 120.00 19 % 4,500.00", "Printed handbooks 12 units 24.95 7 % 299.40",
			"Cloud hosting 3 months 250.00 AE 750.00", "Training material 0.125 kilograms 80.00 E 10.00"},
		document.German: {"Beschreibung Menge Einheit Einzelpreis USt. Nettobetrag",
			"Beratung 37,5 Stunden 120,00 19 % 4.500,00", "Gedruckte Handbücher 12 Stück 24,95 7 % 299,40",
			"Cloud-Hosting 3 Monate 250,00 AE 750,00", "Schulungsmaterial 0,125 Kilogramm 80,00 E 10,00"},
		// French takes the singular below 2: 0,125 kilogramme.
		document.French: {"Désignation Qté Unité Prix unitaire TVA Montant HT",
			"Conseil 37,5 heures 120,00 19 % 4 500,00", "Manuels imprimés 12 unités 24,95 7 % 299,40",
			"Hébergement cloud 3 mois 250,00 AE 750,00", "Matériel de formation 0,125 kilogramme 80,00 E 10,00"},
	}},
	{"(7) the period of the services", map[document.Language][]string{
		document.English: {"Service period 1–30 November 2026"},
		document.German:  {"Leistungszeitraum 1.–30. November 2026"},
		document.French:  {"Période de prestation 1–30 novembre 2026"},
	}},
	{"(8) taxable amount per rate or exemption; (9) rate; (10) VAT payable", map[document.Language][]string{
		document.English: {"VAT category Rate Net amount VAT",
			"S Standard rated 19 % 4,500.00 855.00", "S Standard rated 7 % 299.40 20.96",
			"AE Reverse charge 0 % 750.00 0.00", "E Exempt from VAT 0 % 10.00 0.00",
			"Subtotal 5,559.40 EUR", "VAT 875.96 EUR", "Total 6,435.36 EUR", "Balance due 6,435.36 EUR"},
		document.German: {"Steuerkategorie Satz Nettobetrag Umsatzsteuer",
			"S Steuerpflichtig 19 % 4.500,00 855,00", "S Steuerpflichtig 7 % 299,40 20,96",
			"AE Steuerschuldnerschaft des Leistungsempfängers 0 % 750,00 0,00", "E Steuerbefreit 0 % 10,00 0,00",
			"Summe netto 5.559,40 EUR", "Umsatzsteuer 875,96 EUR", "Gesamtbetrag 6.435,36 EUR", "Offener Betrag 6.435,36 EUR"},
		document.French: {"Catégorie de TVA Taux Base HT TVA",
			"S Soumis à la TVA 19 % 4 500,00 855,00", "S Soumis à la TVA 7 % 299,40 20,96",
			"AE Autoliquidation 0 % 750,00 0,00", "E Exonéré de TVA 0 % 10,00 0,00",
			"Total HT 5 559,40 EUR", "TVA 875,96 EUR", "Total TTC 6 435,36 EUR", "Reste à payer 6 435,36 EUR"},
	}},
	{"(11) the exemption's reference", map[document.Language][]string{
		document.English: {"Exemption reason: Exempt training under Article 132(1)(i) (VATEX-EU-132-1I)"},
		document.German:  {"Grund der Steuerbefreiung: Steuerfreie Schulung nach § 4 Nr. 21 UStG (VATEX-EU-132-1I)"},
		document.French:  {"Motif d'exonération : Formation exonérée, article 261-4-4° du CGI (VATEX-EU-132-1I)"},
	}},
	{"terms, due date and bank details (§ 14 UStG, CGI art. 242 nonies A)", map[document.Language][]string{
		document.English: {"Due date 20 December 2026", "Payment", "Payable within 14 days",
			"Account holder: Nordlicht Consulting GmbH", "IBAN: DE89 3704 0044 0532 0130 00 · BIC: COBADEFFXXX"},
		document.German: {"Fällig am 20. Dezember 2026", "Zahlung", "Zahlbar innerhalb von 14 Tagen",
			"Kontoinhaber: Nordlicht Consulting GmbH", "IBAN: DE89 3704 0044 0532 0130 00 · BIC: COBADEFFXXX"},
		document.French: {"Date d'échéance 20 décembre 2026", "Paiement", "Payable sous 14 jours",
			"Titulaire du compte : Nordlicht Consulting GmbH", "IBAN : DE89 3704 0044 0532 0130 00 · BIC : COBADEFFXXX"},
	}},
	{"the buyer's references", map[document.Language][]string{
		document.English: {"Purchase order PO-4711", "Buyer reference 04011000-12345-67"},
		document.German:  {"Bestellnummer PO-4711", "Käuferreferenz 04011000-12345-67"},
		document.French:  {"Bon de commande PO-4711", "Référence acheteur 04011000-12345-67"},
	}},
	{"page", map[document.Language][]string{
		document.English: {"Invoice INV-2026-000042 · page 1/1"},
		document.German:  {"Rechnung INV-2026-000042 · Seite 1/1"},
		// The French wording is the longest: the payment details with
		// their 30 mm QR code go on to a second page.
		document.French: {"Facture INV-2026-000042 · page 1/2", "Facture INV-2026-000042 · page 2/2"},
	}},
}

// wording is what Article 226(11a) and (11) require of article226's
// reverse-charge and exempt lines, in each language (vat.Wording).
var wording = map[document.Language][]string{
	document.English: {
		"Reverse charge: VAT to be accounted for by the recipient, Article 196 of Directive 2006/112/EC",
		"Exempt from VAT under Directive 2006/112/EC (such as Article 132 or 135) or the corresponding national provision",
	},
	document.German: {
		"Steuerschuldnerschaft des Leistungsempfängers (Reverse Charge, Art. 196 MwStSystRL)",
		"Steuerfreier Umsatz nach der MwStSystRL (etwa Art. 132 oder 135) oder der entsprechenden nationalen Vorschrift",
	},
	document.French: {
		"Autoliquidation : TVA due par le preneur, article 196 de la directive 2006/112/CE",
		"Exonération de TVA en application de la directive 2006/112/CE (par exemple ses articles 132 ou 135) ou de la disposition nationale correspondante",
	},
}

// An invoice in English, German and French carries every item of Article
// 226 in its language, as pdftotext reads it back: labels, numbers,
// dates, units, country and category names, and the reverse-charge and
// exemption wording that points (11) and (11a) require.
func TestInvoiceCarriesArticle226InItsLanguage(t *testing.T) {
	t.Parallel()
	for _, lang := range document.Languages() {
		t.Run(string(lang), func(t *testing.T) {
			t.Parallel()
			text := documenttest.Text(t, render(t, article226(lang)))
			for _, it := range items {
				want := it.lines[lang]
				require.NotEmpty(t, want, "%s has no lines in %s", it.point, lang)
				for _, l := range want {
					require.True(t, documenttest.HasLine(text, l), "Article 226%s: no line %q in:\n%s", it.point, l, text)
				}
			}
			// (11a) and (11): the categories' wording, which may wrap.
			documenttest.RequireText(t, text, wording[lang]...)
			// The reverse-charge line gives its category's default reason,
			// which the wording already says: it is not repeated in English.
			require.NotContains(t, text, ": Reverse charge (VATEX-EU-AE)")
		})
	}
}
