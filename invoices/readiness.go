package invoices

import (
	"fmt"
	"net/http"
	"slices"

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
	return &Readiness{Ready: len(missing) == 0, Missing: append([]problem.FieldError{}, missing...)}
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
