package einvoice

import (
	"encoding/xml"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/party"
)

// The UBL 2.1 Invoice and CreditNote (EN 16931-3-2), in the order of
// UBL's schemas; one type writes both, each leaving out what the other
// has alone (an invoice's DueDate and InvoiceLine, a credit note's
// CreditNoteLine).
type ublDocument struct {
	XMLName            xml.Name         `xml:""`
	NS                 string           `xml:"xmlns,attr"`
	CAC                string           `xml:"xmlns:cac,attr"`
	CBC                string           `xml:"xmlns:cbc,attr"`
	CustomizationID    string           `xml:"cbc:CustomizationID"`     // BT-24
	ProfileID          string           `xml:"cbc:ProfileID,omitempty"` // BT-23
	ID                 string           `xml:"cbc:ID"`                  // BT-1
	IssueDate          string           `xml:"cbc:IssueDate"`           // BT-2
	DueDate            string           `xml:"cbc:DueDate,omitempty"`   // BT-9
	InvoiceTypeCode    string           `xml:"cbc:InvoiceTypeCode,omitempty"`
	CreditNoteTypeCode string           `xml:"cbc:CreditNoteTypeCode,omitempty"`
	Note               string           `xml:"cbc:Note,omitempty"`             // BT-22
	Currency           string           `xml:"cbc:DocumentCurrencyCode"`       // BT-5
	BuyerReference     string           `xml:"cbc:BuyerReference,omitempty"`   // BT-10
	Period             *ublPeriod       `xml:"cac:InvoicePeriod,omitempty"`    // BG-14
	Order              *ublOrder        `xml:"cac:OrderReference,omitempty"`   // BT-13
	Billing            *ublBilling      `xml:"cac:BillingReference,omitempty"` // BG-3
	Supplier           ublPartyRole     `xml:"cac:AccountingSupplierParty"`
	Customer           ublPartyRole     `xml:"cac:AccountingCustomerParty"`
	Delivery           *ublDelivery     `xml:"cac:Delivery,omitempty"` // BG-13
	Means              []ublMeans       `xml:"cac:PaymentMeans,omitempty"`
	Terms              *ublTerms        `xml:"cac:PaymentTerms,omitempty"`
	TaxTotal           ublTaxTotal      `xml:"cac:TaxTotal"`
	Totals             ublMonetaryTotal `xml:"cac:LegalMonetaryTotal"` // BG-22
	InvoiceLines       []ublLine        `xml:"cac:InvoiceLine,omitempty"`
	CreditNoteLines    []ublLine        `xml:"cac:CreditNoteLine,omitempty"`
}

type ublAmount struct {
	Value    string `xml:",chardata"`
	Currency string `xml:"currencyID,attr"`
}

type ublPeriod struct {
	Start string `xml:"cbc:StartDate"` // BT-73
	End   string `xml:"cbc:EndDate"`   // BT-74
}

type ublOrder struct {
	ID string `xml:"cbc:ID"`
}

type ublBilling struct {
	Invoice ublDocumentReference `xml:"cac:InvoiceDocumentReference"`
}

type ublDocumentReference struct {
	ID        string `xml:"cbc:ID"`                  // BT-25
	IssueDate string `xml:"cbc:IssueDate,omitempty"` // BT-26
}

type ublPartyRole struct {
	Party ublParty `xml:"cac:Party"`
}

type ublSchemed struct {
	Value  string `xml:",chardata"`
	Scheme string `xml:"schemeID,attr"`
}

type ublParty struct {
	Endpoint  *ublSchemed    `xml:"cbc:EndpointID,omitempty"`     // BT-34, BT-49
	Name      *ublPartyName  `xml:"cac:PartyName,omitempty"`      // BT-28
	Address   *ublAddress    `xml:"cac:PostalAddress,omitempty"`  // BG-5, BG-8
	TaxScheme []ublPartyTax  `xml:"cac:PartyTaxScheme,omitempty"` // BT-31, BT-32, BT-48
	Legal     ublLegalEntity `xml:"cac:PartyLegalEntity"`         // BT-27, BT-30, BT-44
	Contact   *ublContact    `xml:"cac:Contact,omitempty"`        // BG-6
}

type ublPartyName struct {
	Name string `xml:"cbc:Name"`
}

type ublAddress struct {
	Street      string          `xml:"cbc:StreetName,omitempty"`           // BT-35
	Additional  string          `xml:"cbc:AdditionalStreetName,omitempty"` // BT-36
	City        string          `xml:"cbc:CityName,omitempty"`
	Postcode    string          `xml:"cbc:PostalZone,omitempty"`
	Subdivision string          `xml:"cbc:CountrySubentity,omitempty"`
	Line        *ublAddressLine `xml:"cac:AddressLine,omitempty"` // BT-162
	Country     ublCountry      `xml:"cac:Country"`
}

type ublAddressLine struct {
	Line string `xml:"cbc:Line"`
}

type ublCountry struct {
	Code string `xml:"cbc:IdentificationCode"`
}

type ublPartyTax struct {
	CompanyID string       `xml:"cbc:CompanyID"`
	Scheme    ublTaxScheme `xml:"cac:TaxScheme"`
}

type ublTaxScheme struct {
	ID string `xml:"cbc:ID"`
}

type ublLegalEntity struct {
	Name      string `xml:"cbc:RegistrationName"`
	CompanyID string `xml:"cbc:CompanyID,omitempty"`
}

type ublContact struct {
	Name  string `xml:"cbc:Name,omitempty"`
	Phone string `xml:"cbc:Telephone,omitempty"`
	Email string `xml:"cbc:ElectronicMail,omitempty"`
}

type ublDelivery struct {
	Date     string       `xml:"cbc:ActualDeliveryDate,omitempty"` // BT-72
	Location *ublLocation `xml:"cac:DeliveryLocation,omitempty"`
}

type ublLocation struct {
	Address ublAddress `xml:"cac:Address"` // BG-15
}

type ublMeans struct {
	Code      string      `xml:"cbc:PaymentMeansCode"`    // BT-81
	PaymentID string      `xml:"cbc:PaymentID,omitempty"` // BT-83
	Account   *ublAccount `xml:"cac:PayeeFinancialAccount,omitempty"`
}

type ublAccount struct {
	ID     string     `xml:"cbc:ID"`             // BT-84
	Name   string     `xml:"cbc:Name,omitempty"` // BT-85
	Branch *ublBranch `xml:"cac:FinancialInstitutionBranch,omitempty"`
}

type ublBranch struct {
	ID string `xml:"cbc:ID"` // BT-86
}

type ublTerms struct {
	Note string `xml:"cbc:Note"` // BT-20
}

type ublTaxTotal struct {
	Amount    ublAmount        `xml:"cbc:TaxAmount"` // BT-110
	Subtotals []ublTaxSubtotal `xml:"cac:TaxSubtotal"`
}

type ublTaxSubtotal struct {
	Taxable  ublAmount      `xml:"cbc:TaxableAmount"` // BT-116
	Tax      ublAmount      `xml:"cbc:TaxAmount"`     // BT-117
	Category ublTaxCategory `xml:"cac:TaxCategory"`
}

type ublTaxCategory struct {
	ID         string       `xml:"cbc:ID"`                               // BT-118, BT-151
	Percent    string       `xml:"cbc:Percent,omitempty"`                // BT-119, BT-152
	ReasonCode string       `xml:"cbc:TaxExemptionReasonCode,omitempty"` // BT-121
	Reason     string       `xml:"cbc:TaxExemptionReason,omitempty"`     // BT-120
	Scheme     ublTaxScheme `xml:"cac:TaxScheme"`
}

type ublMonetaryTotal struct {
	LineExtension ublAmount `xml:"cbc:LineExtensionAmount"` // BT-106
	TaxExclusive  ublAmount `xml:"cbc:TaxExclusiveAmount"`  // BT-109
	TaxInclusive  ublAmount `xml:"cbc:TaxInclusiveAmount"`  // BT-112
	Payable       ublAmount `xml:"cbc:PayableAmount"`       // BT-115
}

type ublQuantity struct {
	Value string `xml:",chardata"`
	Unit  string `xml:"unitCode,attr"`
}

type ublLine struct {
	ID               string       `xml:"cbc:ID"` // BT-126
	InvoicedQuantity *ublQuantity `xml:"cbc:InvoicedQuantity,omitempty"`
	CreditedQuantity *ublQuantity `xml:"cbc:CreditedQuantity,omitempty"`
	Net              ublAmount    `xml:"cbc:LineExtensionAmount"` // BT-131
	Item             ublItem      `xml:"cac:Item"`
	Price            ublPrice     `xml:"cac:Price"`
}

type ublItem struct {
	Name     string         `xml:"cbc:Name"` // BT-153
	Category ublTaxCategory `xml:"cac:ClassifiedTaxCategory"`
}

type ublPrice struct {
	Amount ublAmount `xml:"cbc:PriceAmount"` // BT-146
}

// writeUBL writes v as a UBL 2.1 Invoice or CreditNote.
func writeUBL(v *view) ([]byte, error) {
	amt := func(n int64) ublAmount { return ublAmount{Value: v.amount(n), Currency: v.Currency} }
	x := ublDocument{
		CAC:             "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2",
		CBC:             "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2",
		CustomizationID: v.spec, ProfileID: v.process, ID: v.Number, IssueDate: isoDate(v.IssueDate),
		Note: v.note, Currency: v.Currency, BuyerReference: v.buyerRef,
		Supplier: ublPartyRole{Party: ublPartyOf(v.seller, v.sellerEnd, true)},
		Customer: ublPartyRole{Party: ublPartyOf(v.buyer, v.buyerEnd, false)},
	}
	if v.creditNote {
		x.XMLName.Local, x.NS = "CreditNote", "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
		x.CreditNoteTypeCode = v.typeCode
	} else {
		x.XMLName.Local, x.NS = "Invoice", "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
		x.InvoiceTypeCode = v.typeCode
		if !v.DueDate.IsZero() {
			x.DueDate = isoDate(v.DueDate)
		}
	}
	if p := v.ServicePeriod; !p.IsZero() {
		x.Period = &ublPeriod{Start: isoDate(p.Start), End: isoDate(p.End)}
	}
	if v.PurchaseOrder != "" {
		x.Order = &ublOrder{ID: v.PurchaseOrder}
	}
	if c := v.Corrects; c != nil {
		x.Billing = &ublBilling{Invoice: ublDocumentReference{ID: c.Number}}
		if !c.Date.IsZero() {
			x.Billing.Invoice.IssueDate = isoDate(c.Date)
		}
	}
	if !v.SupplyDate.IsZero() || v.deliverTo != nil {
		x.Delivery = &ublDelivery{}
		if !v.SupplyDate.IsZero() {
			x.Delivery.Date = isoDate(v.SupplyDate)
		}
		if v.deliverTo != nil {
			x.Delivery.Location = &ublLocation{Address: *ublAddressOf(*v.deliverTo)}
		}
	}
	for _, m := range v.means {
		um := ublMeans{Code: m.code}
		if !v.creditNote {
			um.PaymentID = v.Number
		}
		if m.iban != "" {
			um.Account = &ublAccount{ID: string(m.iban), Name: v.seller.Name}
			if m.bic != "" {
				um.Account.Branch = &ublBranch{ID: string(m.bic)}
			}
		}
		x.Means = append(x.Means, um)
	}
	if v.terms != "" {
		x.Terms = &ublTerms{Note: v.terms}
	}
	x.TaxTotal.Amount = amt(v.TaxTotal)
	for _, g := range v.groups {
		x.TaxTotal.Subtotals = append(x.TaxTotal.Subtotals, ublTaxSubtotal{Taxable: amt(g.basis), Tax: amt(g.tax),
			Category: ublTaxCategory{ID: string(g.category), Percent: percent(g.rateBPS), ReasonCode: g.code, Reason: g.reason,
				Scheme: ublTaxScheme{ID: "VAT"}}})
	}
	x.Totals = ublMonetaryTotal{LineExtension: amt(v.Subtotal), TaxExclusive: amt(v.Subtotal), TaxInclusive: amt(v.Total), Payable: amt(v.Total)}
	for i, l := range v.Lines {
		ul := ublLineOf(v, i, l)
		if v.creditNote {
			ul.CreditedQuantity, ul.InvoicedQuantity = ul.InvoicedQuantity, nil
			x.CreditNoteLines = append(x.CreditNoteLines, ul)
		} else {
			x.InvoiceLines = append(x.InvoiceLines, ul)
		}
	}
	return marshal(x)
}

func ublLineOf(v *view, i int, l document.Line) ublLine {
	cat := ublTaxCategory{ID: string(l.VATCategory), Scheme: ublTaxScheme{ID: "VAT"}}
	if hasRate(l.VATCategory) {
		cat.Percent = percent(l.TaxRateBPS)
	}
	return ublLine{
		ID:               itoa(i + 1),
		InvoicedQuantity: &ublQuantity{Value: l.Quantity.String(), Unit: l.Unit},
		Net:              ublAmount{Value: v.amount(l.Amount), Currency: v.Currency},
		Item:             ublItem{Name: l.Description, Category: cat},
		Price:            ublPrice{Amount: ublAmount{Value: v.amount(l.UnitAmount), Currency: v.Currency}},
	}
}

func ublPartyOf(p document.Party, end Endpoint, seller bool) ublParty {
	up := ublParty{Legal: ublLegalEntity{Name: p.Name}}
	if !end.IsZero() {
		up.Endpoint = &ublSchemed{Value: end.ID, Scheme: end.Scheme}
	}
	if seller && p.TradingName != "" && p.TradingName != p.Name {
		up.Name = &ublPartyName{Name: p.TradingName}
	}
	if p.Address.Country != "" {
		up.Address = ublAddressOf(p.Address)
	}
	if p.VATID != "" {
		up.TaxScheme = append(up.TaxScheme, ublPartyTax{CompanyID: string(p.VATID), Scheme: ublTaxScheme{ID: "VAT"}})
	}
	// EN 16931 has no buyer's tax number: only the seller's (BT-32).
	if seller && p.TaxNumber != "" {
		up.TaxScheme = append(up.TaxScheme, ublPartyTax{CompanyID: p.TaxNumber, Scheme: ublTaxScheme{ID: "FC"}})
	}
	if seller {
		up.Legal.CompanyID = p.Registration
		if c := p.Contact; c.Name != "" || c.Phone != "" || c.Email != "" {
			up.Contact = &ublContact{Name: c.Name, Phone: c.Phone, Email: c.Email}
		}
	}
	return up
}

func ublAddressOf(a party.Address) *ublAddress {
	ua := &ublAddress{City: a.City, Postcode: a.Postcode, Subdivision: a.Subdivision, Country: ublCountry{Code: string(a.Country)}}
	for i, l := range a.Lines {
		switch i {
		case 0:
			ua.Street = l
		case 1:
			ua.Additional = l
		case 2:
			ua.Line = &ublAddressLine{Line: l}
		}
	}
	return ua
}
