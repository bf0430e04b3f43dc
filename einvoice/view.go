package einvoice

import (
	"fmt"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/vat"
)

// view is an invoice as both syntaxes state it: the terms computed once,
// amounts still in minor units.
type view struct {
	Invoice
	format     Format
	exp        int
	creditNote bool
	// spec and process are BT-24 and BT-23 ("" for none).
	spec, process string
	// typeCode is BT-3 (UNTDID 1001): 380 a commercial invoice, 381 a
	// credit note.
	typeCode string
	seller   document.Party
	buyer    document.Party
	// outsideScope: the lines are of category O, whose invoice states no
	// VAT identifier (BR-O-02).
	outsideScope bool
	sellerEnd    Endpoint
	buyerEnd     Endpoint
	buyerRef     string
	note         string
	terms        string
	groups       []group
	// deliverTo is BG-15: the buyer's address where goods cross a border
	// inside the EU (BR-IC-12 asks for its country); nil otherwise.
	deliverTo *party.Address
	means     []means
}

// group is one VAT breakdown (BG-23).
type group struct {
	category vat.Category
	rateBPS  int64
	basis    int64
	tax      int64
	reason   string
	code     string
}

// means is one set of payment instructions (BG-16): how (BT-81, UNCL
// 4461) and to which account (BG-17).
type means struct {
	code string
	iban party.IBAN
	bic  party.BIC
}

// Payment means codes (UNCL 4461).
const (
	meansUndefined      = "1"
	meansCreditTransfer = "30"
	meansSEPATransfer   = "58"
)

// creditedAgainst is BT-20 of a credit note, which owes the buyer its
// total (BR-CO-25 asks for terms or a due date of an amount due).
var creditedAgainst = map[document.Language]string{
	document.English: "Refunded or set off against invoice %s",
	document.German:  "Erstattung oder Verrechnung mit Rechnung %s",
	document.French:  "Remboursé ou imputé sur la facture %s",
}

func newView(inv Invoice, f Format) *view {
	exp, _ := money.Exponent(inv.Currency)
	v := &view{Invoice: inv, format: f, exp: exp, creditNote: inv.Kind == document.KindCreditNote,
		seller: inv.Seller, buyer: inv.BillTo, buyerRef: inv.BuyerReference, typeCode: "380"}
	if v.creditNote {
		v.typeCode = "381"
	}
	switch {
	case f.XRechnung():
		v.spec, v.process = specXRechnung, processPeppol
	case f == Peppol:
		v.spec, v.process = specPeppol, processPeppol
	default:
		v.spec = specCore
	}
	v.groups = groupsOf(inv.Lines)
	for _, g := range v.groups {
		if g.category == vat.OutsideScope {
			v.outsideScope = true
		}
		if g.category == vat.IntraCommunity {
			a := inv.BillTo.Address
			v.deliverTo = &a
		}
	}
	if v.outsideScope {
		v.seller.VATID, v.buyer.VATID = "", ""
	}
	v.sellerEnd = SellerEndpoint(v.seller.VATID, inv.Seller.Contact.Email)
	v.buyerEnd = inv.BuyerEndpoint
	if v.buyerEnd.IsZero() {
		v.buyerEnd = EmailEndpoint(inv.BillTo.Email)
	}
	if v.creditNote {
		v.note = inv.Reason
		if inv.Corrects != nil {
			format, ok := creditedAgainst[inv.Language]
			if !ok {
				format = creditedAgainst[document.English]
			}
			v.terms = fmt.Sprintf(format, inv.Corrects.Number)
		}
	} else {
		v.note = inv.Memo
		if inv.PaymentTermsDays != nil {
			v.terms = inv.Language.Terms(*inv.PaymentTermsDays)
		}
		code := meansCreditTransfer
		if inv.Currency == "EUR" {
			code = meansSEPATransfer
		}
		for _, b := range inv.BankAccounts {
			v.means = append(v.means, means{code: code, iban: b.IBAN, bic: b.BIC})
		}
	}
	// XRechnung asks every invoice for payment instructions (BR-DE-1): a
	// credit note, which the seller pays, names no account of its own.
	if len(v.means) == 0 && f.XRechnung() {
		v.means = []means{{code: meansUndefined}}
	}
	return v
}

// groupsOf sums the lines by VAT category and rate (document.TaxGroups),
// with the first line's exemption reason and code.
func groupsOf(lines []document.Line) []group {
	var out []group
	for _, tg := range (&document.Document{Lines: lines}).TaxGroups() {
		g := group{category: tg.Category, rateBPS: tg.RateBPS, basis: tg.Net, tax: tg.Tax}
		for _, l := range lines {
			if l.VATCategory == tg.Category && l.TaxRateBPS == tg.RateBPS {
				g.reason, g.code = l.ExemptionReason, l.ExemptionCode
				break
			}
		}
		out = append(out, g)
	}
	return out
}

// amount writes minor units as the decimal EN 16931 states: 42840 EUR is
// 428.40, 1500 JPY is 1500.
func (v *view) amount(minor int64) string {
	return decimal(minor, v.exp)
}

// decimal writes n × 10^-exp.
func decimal(n int64, exp int) string {
	if exp == 0 {
		return strconv.FormatInt(n, 10)
	}
	sign := ""
	u := uint64(n)
	if n < 0 {
		sign, u = "-", uint64(-n)
	}
	pow := uint64(1)
	for range exp {
		pow *= 10
	}
	return fmt.Sprintf("%s%d.%0*d", sign, u/pow, exp, u%pow)
}

// percent writes a rate in basis points as a percentage: 1900 is 19.00.
func percent(bps int64) string { return decimal(bps, 2) }

// hasRate reports whether a line of c states a rate: not one outside the
// scope of VAT (BR-O-05).
func hasRate(c vat.Category) bool { return c != vat.OutsideScope }

// isoDate is a calendar date as UBL writes it.
func isoDate(t time.Time) string { return t.Format(time.DateOnly) }

func itoa(i int) string { return strconv.Itoa(i) }
