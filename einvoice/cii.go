package einvoice

import (
	"bytes"
	"encoding/xml"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/party"
)

// The CII D16B document (EN 16931-3-3), in the order its schema
// (CrossIndustryInvoice_100pD16B.xsd) gives the elements. Names carry
// their namespace prefix, declared once on the root.
type ciiInvoice struct {
	XMLName xml.Name       `xml:"rsm:CrossIndustryInvoice"`
	RSM     string         `xml:"xmlns:rsm,attr"`
	RAM     string         `xml:"xmlns:ram,attr"`
	QDT     string         `xml:"xmlns:qdt,attr"`
	UDT     string         `xml:"xmlns:udt,attr"`
	Context ciiContext     `xml:"rsm:ExchangedDocumentContext"`
	Doc     ciiDocument    `xml:"rsm:ExchangedDocument"`
	Trade   ciiTransaction `xml:"rsm:SupplyChainTradeTransaction"`
}

type ciiID struct {
	ID string `xml:"ram:ID"`
}

type ciiContext struct {
	Process   *ciiID `xml:"ram:BusinessProcessSpecifiedDocumentContextParameter,omitempty"` // BT-23
	Guideline ciiID  `xml:"ram:GuidelineSpecifiedDocumentContextParameter"`                 // BT-24
}

type ciiDate struct {
	Value  string `xml:",chardata"`
	Format string `xml:"format,attr"`
}

type ciiDateTime struct {
	DateTime ciiDate `xml:"udt:DateTimeString"`
}

type ciiFormattedDate struct {
	DateTime ciiDate `xml:"qdt:DateTimeString"`
}

func ciiDay(t time.Time) *ciiDateTime {
	return &ciiDateTime{DateTime: ciiDate{Value: t.Format("20060102"), Format: "102"}}
}

type ciiNote struct {
	Content string `xml:"ram:Content"`
}

type ciiDocument struct {
	ID        string       `xml:"ram:ID"`       // BT-1
	TypeCode  string       `xml:"ram:TypeCode"` // BT-3
	IssueDate *ciiDateTime `xml:"ram:IssueDateTime"`
	Notes     []ciiNote    `xml:"ram:IncludedNote,omitempty"` // BG-1
}

type ciiTransaction struct {
	Lines      []ciiLine     `xml:"ram:IncludedSupplyChainTradeLineItem"`
	Agreement  ciiAgreement  `xml:"ram:ApplicableHeaderTradeAgreement"`
	Delivery   ciiDelivery   `xml:"ram:ApplicableHeaderTradeDelivery"`
	Settlement ciiSettlement `xml:"ram:ApplicableHeaderTradeSettlement"`
}

type ciiLine struct {
	Doc        ciiLineDoc        `xml:"ram:AssociatedDocumentLineDocument"`
	Product    ciiProduct        `xml:"ram:SpecifiedTradeProduct"`
	Agreement  ciiLineAgreement  `xml:"ram:SpecifiedLineTradeAgreement"`
	Delivery   ciiLineDelivery   `xml:"ram:SpecifiedLineTradeDelivery"`
	Settlement ciiLineSettlement `xml:"ram:SpecifiedLineTradeSettlement"`
}

type ciiLineDoc struct {
	LineID string `xml:"ram:LineID"` // BT-126
}

type ciiProduct struct {
	Name string `xml:"ram:Name"` // BT-153
}

type ciiQuantity struct {
	Value string `xml:",chardata"`
	Unit  string `xml:"unitCode,attr"`
}

type ciiLineAgreement struct {
	NetPrice ciiPrice `xml:"ram:NetPriceProductTradePrice"` // BG-29
}

type ciiPrice struct {
	Amount string `xml:"ram:ChargeAmount"` // BT-146
}

type ciiLineDelivery struct {
	Billed ciiQuantity `xml:"ram:BilledQuantity"` // BT-129, BT-130
}

type ciiLineSettlement struct {
	Tax     ciiTax         `xml:"ram:ApplicableTradeTax"` // BG-30
	Summary ciiLineSummary `xml:"ram:SpecifiedTradeSettlementLineMonetarySummation"`
}

type ciiLineSummary struct {
	Total string `xml:"ram:LineTotalAmount"` // BT-131
}

// ciiTax is a line's VAT (BG-30) or a VAT breakdown (BG-23).
type ciiTax struct {
	Calculated  string `xml:"ram:CalculatedAmount,omitempty"` // BT-117
	TypeCode    string `xml:"ram:TypeCode"`
	Reason      string `xml:"ram:ExemptionReason,omitempty"` // BT-120
	Basis       string `xml:"ram:BasisAmount,omitempty"`     // BT-116
	Category    string `xml:"ram:CategoryCode"`              // BT-118, BT-151
	ReasonCode  string `xml:"ram:ExemptionReasonCode,omitempty"`
	RatePercent string `xml:"ram:RateApplicablePercent,omitempty"` // BT-119, BT-152
}

type ciiAgreement struct {
	BuyerReference string         `xml:"ram:BuyerReference,omitempty"` // BT-10
	Seller         ciiParty       `xml:"ram:SellerTradeParty"`         // BG-4
	Buyer          ciiParty       `xml:"ram:BuyerTradeParty"`          // BG-7
	Order          *ciiReferenced `xml:"ram:BuyerOrderReferencedDocument,omitempty"`
}

type ciiReferenced struct {
	ID   string            `xml:"ram:IssuerAssignedID"`
	Date *ciiFormattedDate `xml:"ram:FormattedIssueDateTime,omitempty"`
}

type ciiParty struct {
	Name         string           `xml:"ram:Name"`                                 // BT-27, BT-44
	Legal        *ciiLegal        `xml:"ram:SpecifiedLegalOrganization,omitempty"` // BT-30, BT-28
	Contact      *ciiContact      `xml:"ram:DefinedTradeContact,omitempty"`        // BG-6
	Address      *ciiAddress      `xml:"ram:PostalTradeAddress,omitempty"`         // BG-5, BG-8
	Endpoint     *ciiURI          `xml:"ram:URIUniversalCommunication,omitempty"`  // BT-34, BT-49
	Registration []ciiTaxRegister `xml:"ram:SpecifiedTaxRegistration,omitempty"`   // BT-31, BT-32, BT-48
}

type ciiLegal struct {
	ID          string `xml:"ram:ID,omitempty"`
	TradingName string `xml:"ram:TradingBusinessName,omitempty"`
}

type ciiContact struct {
	Name  string    `xml:"ram:PersonName,omitempty"`
	Phone *ciiPhone `xml:"ram:TelephoneUniversalCommunication,omitempty"`
	Email *ciiEmail `xml:"ram:EmailURIUniversalCommunication,omitempty"`
}

type ciiPhone struct {
	Number string `xml:"ram:CompleteNumber"`
}

type ciiEmail struct {
	URI string `xml:"ram:URIID"`
}

type ciiURI struct {
	URI ciiSchemed `xml:"ram:URIID"`
}

type ciiSchemed struct {
	Value  string `xml:",chardata"`
	Scheme string `xml:"schemeID,attr"`
}

type ciiTaxRegister struct {
	ID ciiSchemed `xml:"ram:ID"`
}

type ciiAddress struct {
	Postcode    string `xml:"ram:PostcodeCode,omitempty"`
	Line1       string `xml:"ram:LineOne,omitempty"`
	Line2       string `xml:"ram:LineTwo,omitempty"`
	Line3       string `xml:"ram:LineThree,omitempty"`
	City        string `xml:"ram:CityName,omitempty"`
	Country     string `xml:"ram:CountryID"`
	Subdivision string `xml:"ram:CountrySubDivisionName,omitempty"`
}

type ciiDelivery struct {
	ShipTo *ciiShipTo `xml:"ram:ShipToTradeParty,omitempty"` // BG-13, BG-15
	Event  *ciiEvent  `xml:"ram:ActualDeliverySupplyChainEvent,omitempty"`
}

type ciiShipTo struct {
	Address ciiAddress `xml:"ram:PostalTradeAddress"`
}

type ciiEvent struct {
	Date *ciiDateTime `xml:"ram:OccurrenceDateTime"` // BT-72
}

type ciiSettlement struct {
	PaymentReference string         `xml:"ram:PaymentReference,omitempty"` // BT-83
	Currency         string         `xml:"ram:InvoiceCurrencyCode"`        // BT-5
	Means            []ciiMeans     `xml:"ram:SpecifiedTradeSettlementPaymentMeans,omitempty"`
	Taxes            []ciiTax       `xml:"ram:ApplicableTradeTax"`
	Period           *ciiPeriod     `xml:"ram:BillingSpecifiedPeriod,omitempty"` // BG-14
	Terms            *ciiTerms      `xml:"ram:SpecifiedTradePaymentTerms,omitempty"`
	Summary          ciiSummary     `xml:"ram:SpecifiedTradeSettlementHeaderMonetarySummation"` // BG-22
	Preceding        *ciiReferenced `xml:"ram:InvoiceReferencedDocument,omitempty"`             // BG-3
}

type ciiMeans struct {
	TypeCode    string          `xml:"ram:TypeCode"` // BT-81
	Account     *ciiAccount     `xml:"ram:PayeePartyCreditorFinancialAccount,omitempty"`
	Institution *ciiInstitution `xml:"ram:PayeeSpecifiedCreditorFinancialInstitution,omitempty"`
}

type ciiAccount struct {
	IBAN string `xml:"ram:IBANID"`                // BT-84
	Name string `xml:"ram:AccountName,omitempty"` // BT-85
}

type ciiInstitution struct {
	BIC string `xml:"ram:BICID"` // BT-86
}

type ciiPeriod struct {
	Start *ciiDateTime `xml:"ram:StartDateTime"` // BT-73
	End   *ciiDateTime `xml:"ram:EndDateTime"`   // BT-74
}

type ciiTerms struct {
	Description string       `xml:"ram:Description,omitempty"`     // BT-20
	Due         *ciiDateTime `xml:"ram:DueDateDateTime,omitempty"` // BT-9
}

type ciiAmount struct {
	Value    string `xml:",chardata"`
	Currency string `xml:"currencyID,attr"`
}

type ciiSummary struct {
	LineTotal  string    `xml:"ram:LineTotalAmount"`     // BT-106
	TaxBasis   string    `xml:"ram:TaxBasisTotalAmount"` // BT-109
	TaxTotal   ciiAmount `xml:"ram:TaxTotalAmount"`      // BT-110
	GrandTotal string    `xml:"ram:GrandTotalAmount"`    // BT-112
	DuePayable string    `xml:"ram:DuePayableAmount"`    // BT-115
}

// writeCII writes v as a CII D16B CrossIndustryInvoice.
func writeCII(v *view) ([]byte, error) {
	x := ciiInvoice{
		RSM: "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100",
		RAM: "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
		QDT: "urn:un:unece:uncefact:data:standard:QualifiedDataType:100",
		UDT: "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100",
	}
	if v.process != "" {
		x.Context.Process = &ciiID{ID: v.process}
	}
	x.Context.Guideline.ID = v.spec
	x.Doc = ciiDocument{ID: v.Number, TypeCode: v.typeCode, IssueDate: ciiDay(v.IssueDate)}
	if v.note != "" {
		x.Doc.Notes = []ciiNote{{Content: v.note}}
	}
	t := &x.Trade
	for i, l := range v.Lines {
		t.Lines = append(t.Lines, ciiLineOf(v, i, l))
	}
	t.Agreement = ciiAgreement{BuyerReference: v.buyerRef,
		Seller: ciiPartyOf(v.seller, v.sellerEnd, true), Buyer: ciiPartyOf(v.buyer, v.buyerEnd, false)}
	if v.PurchaseOrder != "" {
		t.Agreement.Order = &ciiReferenced{ID: v.PurchaseOrder}
	}
	if v.deliverTo != nil {
		t.Delivery.ShipTo = &ciiShipTo{Address: *ciiAddressOf(*v.deliverTo)}
	}
	if !v.SupplyDate.IsZero() {
		t.Delivery.Event = &ciiEvent{Date: ciiDay(v.SupplyDate)}
	}
	s := &t.Settlement
	s.Currency = v.Currency
	if !v.creditNote {
		s.PaymentReference = v.Number
	}
	for _, m := range v.means {
		cm := ciiMeans{TypeCode: m.code}
		if m.iban != "" {
			cm.Account = &ciiAccount{IBAN: string(m.iban), Name: v.seller.Name}
		}
		if m.bic != "" {
			cm.Institution = &ciiInstitution{BIC: string(m.bic)}
		}
		s.Means = append(s.Means, cm)
	}
	for _, g := range v.groups {
		s.Taxes = append(s.Taxes, ciiTax{Calculated: v.amount(g.tax), TypeCode: "VAT", Reason: g.reason, Basis: v.amount(g.basis),
			Category: string(g.category), ReasonCode: g.code, RatePercent: percent(g.rateBPS)})
	}
	if p := v.ServicePeriod; !p.IsZero() {
		s.Period = &ciiPeriod{Start: ciiDay(p.Start), End: ciiDay(p.End)}
	}
	if v.terms != "" || !v.DueDate.IsZero() {
		s.Terms = &ciiTerms{Description: v.terms}
		if !v.DueDate.IsZero() {
			s.Terms.Due = ciiDay(v.DueDate)
		}
	}
	s.Summary = ciiSummary{LineTotal: v.amount(v.Subtotal), TaxBasis: v.amount(v.Subtotal),
		TaxTotal: ciiAmount{Value: v.amount(v.TaxTotal), Currency: v.Currency}, GrandTotal: v.amount(v.Total), DuePayable: v.amount(v.Total)}
	if c := v.Corrects; c != nil {
		s.Preceding = &ciiReferenced{ID: c.Number}
		if !c.Date.IsZero() {
			s.Preceding.Date = &ciiFormattedDate{DateTime: ciiDate{Value: c.Date.Format("20060102"), Format: "102"}}
		}
	}
	return marshal(x)
}

func ciiLineOf(v *view, i int, l document.Line) ciiLine {
	tax := ciiTax{TypeCode: "VAT", Category: string(l.VATCategory)}
	if hasRate(l.VATCategory) {
		tax.RatePercent = percent(l.TaxRateBPS)
	}
	return ciiLine{
		Doc:        ciiLineDoc{LineID: itoa(i + 1)},
		Product:    ciiProduct{Name: l.Description},
		Agreement:  ciiLineAgreement{NetPrice: ciiPrice{Amount: v.amount(l.UnitAmount)}},
		Delivery:   ciiLineDelivery{Billed: ciiQuantity{Value: l.Quantity.String(), Unit: l.Unit}},
		Settlement: ciiLineSettlement{Tax: tax, Summary: ciiLineSummary{Total: v.amount(l.Amount)}},
	}
}

func ciiPartyOf(p document.Party, end Endpoint, seller bool) ciiParty {
	cp := ciiParty{Name: p.Name}
	if seller && (p.Registration != "" || (p.TradingName != "" && p.TradingName != p.Name)) {
		cp.Legal = &ciiLegal{ID: p.Registration}
		if p.TradingName != p.Name {
			cp.Legal.TradingName = p.TradingName
		}
	}
	if c := p.Contact; seller && (c.Name != "" || c.Phone != "" || c.Email != "") {
		cp.Contact = &ciiContact{Name: c.Name}
		if c.Phone != "" {
			cp.Contact.Phone = &ciiPhone{Number: c.Phone}
		}
		if c.Email != "" {
			cp.Contact.Email = &ciiEmail{URI: c.Email}
		}
	}
	if p.Address.Country != "" {
		cp.Address = ciiAddressOf(p.Address)
	}
	if !end.IsZero() {
		cp.Endpoint = &ciiURI{URI: ciiSchemed{Value: end.ID, Scheme: end.Scheme}}
	}
	if p.VATID != "" {
		cp.Registration = append(cp.Registration, ciiTaxRegister{ID: ciiSchemed{Value: string(p.VATID), Scheme: "VA"}})
	}
	// EN 16931 has no buyer's tax number: only the seller's (BT-32).
	if seller && p.TaxNumber != "" {
		cp.Registration = append(cp.Registration, ciiTaxRegister{ID: ciiSchemed{Value: p.TaxNumber, Scheme: "FC"}})
	}
	return cp
}

func ciiAddressOf(a party.Address) *ciiAddress {
	ca := &ciiAddress{Postcode: a.Postcode, City: a.City, Country: string(a.Country), Subdivision: a.Subdivision}
	lines := []*string{&ca.Line1, &ca.Line2, &ca.Line3}
	for i, l := range a.Lines {
		if i < len(lines) {
			*lines[i] = l
		}
	}
	return ca
}

// marshal writes x with the XML declaration, indented, ending in a newline.
func marshal(x any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
