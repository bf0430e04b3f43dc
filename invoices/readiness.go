package invoices

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/vat"
)

// CodeInvoiceIncomplete is the 422 problem code of issue-invoice on a
// draft that is not yet a legal invoice: its errors name each fact
// missing, before any approval is asked for it.
const CodeInvoiceIncomplete = "INVOICE_INCOMPLETE"

// The codes of what a draft may lack, one per rule of Readiness.
const (
	MissingLines          = "LINES_MISSING"
	MissingSeller         = "SELLER_MISSING"
	MissingSellerAddress  = "SELLER_ADDRESS_MISSING"
	MissingSellerTaxID    = "SELLER_TAX_ID_MISSING"
	MissingSellerVATID    = "SELLER_VAT_ID_MISSING"
	MissingBuyerAddress   = "BUYER_ADDRESS_MISSING"
	MissingBuyerVATID     = "BUYER_VAT_ID_MISSING"
	VATIDsNotTwoEUStates  = "VAT_IDS_NOT_TWO_EU_STATES"
	MissingSupplyDate     = "SUPPLY_DATE_MISSING"
	OutsideScopeWithOther = "OUTSIDE_SCOPE_WITH_OTHER_CATEGORIES"
	DueDatePast           = "DUE_DATE_PAST"
)

// The codes of what the customer's e-invoice format asks beyond a legal
// invoice, one per rule of formatReadiness; each message names the rule
// of EN 16931, XRechnung (BR-DE-*) or Peppol BIS (PEPPOL-EN16931-*).
const (
	CurrencyNotRepresentable       = "CURRENCY_NOT_REPRESENTABLE"
	MissingPaymentDue              = "PAYMENT_DUE_MISSING"
	MissingSellerIdentifier        = "SELLER_IDENTIFIER_MISSING"
	MissingBuyerReference          = "BUYER_REFERENCE_MISSING"
	MissingSellerContact           = "SELLER_CONTACT_MISSING"
	MissingSellerPostcode          = "SELLER_POSTCODE_MISSING"
	MissingBuyerPostcode           = "BUYER_POSTCODE_MISSING"
	MissingPaymentMeans            = "PAYMENT_MEANS_MISSING"
	MissingBuyerElectronicAddress  = "BUYER_ELECTRONIC_ADDRESS_MISSING"
	MissingSellerElectronicAddress = "SELLER_ELECTRONIC_ADDRESS_MISSING"
	MissingPeppolID                = "PEPPOL_ID_MISSING"
)

// Readiness says what keeps a draft from being a legal invoice (Article
// 226 of Directive 2006/112/EC, and EN 16931's rules for the categories
// its lines use): what the draft, its customer c or the seller s (nil
// while none is set) lack, each naming its field. Empty: the draft may
// be issued.
type Readiness struct {
	Ready   bool                 `json:"ready"`
	Missing []problem.FieldError `json:"missing"`
}

// readinessOf checks the draft inv, billed to c and issued by s, on
// today's date.
func readinessOf(inv *Invoice, c *Customer, s *Seller, today Date) *Readiness {
	var missing []problem.FieldError
	add := func(field, code, format string, args ...any) {
		missing = append(missing, problem.FieldError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if len(inv.Lines) == 0 {
		add("lines", MissingLines, "an invoice needs at least one line")
	}
	if inv.DueDate != nil && inv.DueDate.Before(today.Time) {
		add("due_date", DueDatePast, "the due date %s is before the issue date %s; update the draft", inv.DueDate, today)
	}
	var categories []vat.Category
	for _, l := range inv.Lines {
		if !slices.Contains(categories, l.VATCategory) {
			categories = append(categories, l.VATCategory)
		}
	}
	needs := func(rule func(vat.Category) bool) (vat.Category, bool) {
		for _, cat := range categories {
			if rule(cat) {
				return cat, true
			}
		}
		return "", false
	}
	if cat, ok := needs(vat.Exclusive); ok && len(categories) > 1 {
		add("lines", OutsideScopeWithOther, "a supply outside the scope of VAT (category %s) is invoiced on its own, without lines of other VAT categories (EN 16931 BR-O-11)", cat)
	}

	if s == nil {
		add("seller", MissingSeller, "no seller is set: an admin sets who issues the invoices with `invoiced seller set` or PUT /v1/seller")
	} else {
		if !addressComplete(s.Address) {
			add("seller.address", MissingSellerAddress, "the seller's postal address needs a street line, a city and a country")
		}
		if cat, ok := needs(vat.RequiresSellerVATID); ok && s.VATID == "" {
			add("seller.vat_id", MissingSellerVATID, "lines of VAT category %s (%s) need the seller's VAT identifier", cat, cat.Name("en"))
		} else if s.VATID == "" && s.TaxNumber == "" && !slices.Equal(categories, []vat.Category{vat.OutsideScope}) {
			add("seller.vat_id", MissingSellerTaxID, "an invoice names the seller's VAT identifier or, without one, its tax number")
		}
	}

	if !addressComplete(c.Address) {
		add("customer.address", MissingBuyerAddress, "the customer %s needs a postal address with a street line, a city and a country", c.Name)
	}
	if cat, ok := needs(vat.RequiresBuyerVATID); ok && c.VATID == "" {
		add("customer.vat_id", MissingBuyerVATID, "lines of VAT category %s (%s) need the customer's VAT identifier", cat, cat.Name("en"))
	}
	if slices.Contains(categories, vat.IntraCommunity) && s != nil && s.VATID != "" && c.VATID != "" &&
		(!inEUForGoods(s.VATID) || !inEUForGoods(c.VATID) || s.VATID.Prefix() == c.VATID.Prefix()) {
		add("customer.vat_id", VATIDsNotTwoEUStates, "an intra-community supply (category K) is between two EU member states (or one and Northern Ireland, XI): the seller's VAT identifier is of %s, the customer's of %s",
			s.VATID.Prefix(), c.VATID.Prefix())
	}
	if cat, ok := needs(vat.RequiresSupplyDate); ok && inv.SupplyDate == nil && inv.ServicePeriod == nil {
		add("supply_date", MissingSupplyDate, "lines of VAT category %s (%s) state the date of supply or the period invoiced (EN 16931 BR-IC-11)", cat, cat.Name("en"))
	}
	if f := c.EInvoiceFormat; f != "" && f != einvoice.None {
		formatReadiness(add, f, inv, c, s, slices.Equal(categories, []vat.Category{vat.OutsideScope}))
	}
	return &Readiness{Ready: len(missing) == 0, Missing: append([]problem.FieldError{}, missing...)}
}

// formatReadiness adds what the customer c's e-invoice format f asks of
// the draft inv beyond a legal invoice, as far as it can be known before
// issue, so that an issued invoice always yields its e-invoice: EN
// 16931's rules for every format, then XRechnung's or Peppol's. Only the
// lines of outsideScope (category O) state no VAT identifier (BR-O-02).
func formatReadiness(add func(field, code, format string, args ...any), f einvoice.Format, inv *Invoice, c *Customer, s *Seller, outsideScope bool) {
	if err := einvoice.CheckCurrency("currency", inv.Currency); err != nil {
		add("currency", CurrencyNotRepresentable, "%s amounts have more than two decimals, which an EN 16931 e-invoice (%s) cannot state without rounding (BR-DEC-09 and the other BR-DEC rules): invoice this customer in another currency, or set its einvoice_format to none", inv.Currency, f)
	}
	if inv.DueDate == nil && inv.PaymentTermsDays == nil && c.PaymentTermsDays == nil && (s == nil || s.PaymentTermsDays == nil) {
		add("payment_terms_days", MissingPaymentDue, "an e-invoice (%s) asking for payment states a due date or payment terms (EN 16931 BR-CO-25): set due_date or payment_terms_days, or the customer's or seller's terms", f)
	}
	buyerReference := cmp.Or(inv.BuyerReference, c.BuyerReference)
	if s != nil {
		if (s.VATID == "" || outsideScope) && s.Registration == "" {
			add("seller.registration", MissingSellerIdentifier, "an e-invoice (%s) identifies the seller by its VAT identifier or its legal registration (EN 16931 BR-CO-26); %s", f,
				map[bool]string{true: "an invoice outside the scope of VAT states no VAT identifier (BR-O-02), so it needs the registration", false: "the seller has neither"}[outsideScope])
		}
	}
	switch {
	case f.XRechnung():
		if buyerReference == "" {
			add("buyer_reference", MissingBuyerReference, "an XRechnung states the buyer reference, the Leitweg-ID of a German public buyer (BR-DE-15): set the draft's or the customer's buyer_reference")
		}
		if c.Address.Postcode == "" {
			add("customer.address.postcode", MissingBuyerPostcode, "an XRechnung states the buyer's postcode (BR-DE-9)")
		}
		if c.Email == "" && c.PeppolID == "" {
			add("customer.email", MissingBuyerElectronicAddress, "an XRechnung states the buyer's electronic address (BT-49): the customer's email or peppol_id")
		}
		if s == nil {
			return
		}
		if s.Address.Postcode == "" {
			add("seller.address.postcode", MissingSellerPostcode, "an XRechnung states the seller's postcode (BR-DE-4)")
		}
		for _, r := range []struct{ field, value, rule, what string }{
			{"seller.contact.name", s.Contact.Name, "BR-DE-5", "contact point"},
			{"seller.contact.phone", s.Contact.Phone, "BR-DE-6", "telephone number"},
			{"seller.contact.email", s.Contact.Email, "BR-DE-7", "email address"},
		} {
			if r.value == "" {
				add(r.field, MissingSellerContact, "an XRechnung states the seller's %s (%s)", r.what, r.rule)
			}
		}
		if len(s.BankAccounts) == 0 {
			add("seller.bank_accounts", MissingPaymentMeans, "an XRechnung states the payment instructions (BR-DE-1): the seller's bank account to pay into")
		}
	case f == einvoice.Peppol:
		if c.PeppolID == "" {
			add("customer.peppol_id", MissingPeppolID, "a Peppol invoice is addressed to the buyer's Peppol participant id (PEPPOL-EN16931-R010): set the customer's peppol_id, such as 0088:4035811991021")
		}
		if buyerReference == "" && inv.PurchaseOrder == "" {
			add("buyer_reference", MissingBuyerReference, "a Peppol invoice states the buyer reference or the purchase order (PEPPOL-EN16931-R003)")
		}
		if s != nil && einvoice.SellerEndpoint(s.VATID, s.Contact.Email).IsZero() {
			add("seller.contact.email", MissingSellerElectronicAddress, "a Peppol invoice states the seller's electronic address (PEPPOL-EN16931-R020): its VAT identifier where the country has a Peppol scheme for it, else its contact email")
		}
	}
}

// inEUForGoods reports whether v is of a member state, or of Northern
// Ireland (XI), which the Windsor Framework keeps in the EU's VAT area
// for goods: a supply of goods between Germany and an XI number is an
// intra-community supply.
func inEUForGoods(v party.VATID) bool {
	return v.EUMember() || v.Prefix() == "XI"
}

// addressComplete is an address an invoice can be sent to: a street line,
// a city and a country.
func addressComplete(a party.Address) bool {
	return len(a.Lines) > 0 && a.City != "" && a.Country != ""
}

// incomplete is issue-invoice's refusal of a draft that is not ready.
func incomplete(r *Readiness) error {
	e := problem.New(http.StatusUnprocessableEntity, CodeInvoiceIncomplete,
		"the draft is not yet a legal invoice: supply what each error names, then issue it again; no approval was requested")
	e.Errors = r.Missing
	return e
}
