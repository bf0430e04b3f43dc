// Package document renders what the back office sends a customer — an
// invoice, and in the same shape a credit note — to PDF, in-process.
//
// A Document is the common model: who issues it and whom it bills, its
// number and dates, lines, VAT per category and rate, totals, how to pay,
// payments and what is still owed, and the language it is written in. Its
// source (the invoices package) fills it; Render draws it the same way for
// every kind, to the same bytes for the same document, with every item
// Article 226 of Directive 2006/112/EC asks of an invoice that the
// document holds.
package document

import (
	"time"

	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
)

// Kind is what a document is; it heads the page.
type Kind string

// The kinds.
const (
	KindInvoice    Kind = "invoice"
	KindCreditNote Kind = "credit_note"
)

// Mark stamps a document that is not (or no longer) a valid one, with a
// sentence under the heading saying why, in the document's language.
type Mark string

// The marks: a draft has no number yet and may still change; a void
// invoice is not to be paid.
const (
	MarkNone  Mark = ""
	MarkDraft Mark = "DRAFT"
	MarkVoid  Mark = "VOID"
)

// Party is the seller or whom a document bills, as Article 226(5) names
// them: full name and address, and the identifiers of points (3) and (4).
// Every field may be empty and is then left out.
type Party struct {
	// Name is the legal name.
	Name string
	// TradingName is the name it trades under, printed beside the legal
	// name when it differs (the seller's).
	TradingName string
	// Address prints as its street lines, "postcode city", the
	// subdivision and the country's name in the document's language.
	Address party.Address
	// VATID is the VAT identification number (Article 226(3), (4)).
	VATID party.VATID
	// TaxNumber is the national tax number (Steuernummer, numéro
	// fiscal), labelled as such.
	TaxNumber string
	// Registration is the company registration as the register words it
	// ("Amtsgericht Charlottenburg, HRB 12345 B").
	Registration string
	// Contact is whom to ask about the document (the seller's).
	Contact party.Contact
	// Email is where the party takes its documents (the buyer's); left
	// out when it is the contact's.
	Email string
}

// Period is a span of calendar days, both included: a service period.
type Period struct {
	Start, End time.Time
}

// IsZero reports whether p is no period.
func (p Period) IsZero() bool { return p.Start.IsZero() && p.End.IsZero() }

// Reference names another document by its number and issue date: the
// invoice a credit note corrects (Article 219).
type Reference struct {
	Number string
	Date   time.Time
}

// Line is one line: Amount is quantity × unit amount (its net amount),
// TaxAmount its share of its VAT category and rate's tax, both in minor
// units of the document's currency; Unit is a UN/ECE Recommendation 20
// code; the exemption reason and VATEX code are the line's for a category
// that needs one (vat.Category.NeedsExemption).
type Line struct {
	Description     string
	Quantity        quantity.Quantity
	Unit            string
	UnitAmount      int64
	VATCategory     vat.Category
	TaxRateBPS      int64
	ExemptionReason string
	ExemptionCode   string
	Amount          int64
	TaxAmount       int64
}

// Payment is money received against the document, on a calendar date,
// or the reversal of such a payment (negative, on the day it was
// reversed). The document names its method in its own language, then its
// Reference as it is; a reversal's Reference is the reason given.
type Payment struct {
	Date      time.Time
	Method    PaymentMethod
	Reference string
	Reversal  bool
	Amount    int64
}

// PaymentMethod is how a payment was made; a method the document has no
// word for (other, or none) is left out and the reference names it.
type PaymentMethod string

// The payment methods a document names.
const (
	BankTransfer PaymentMethod = "bank_transfer"
	Card         PaymentMethod = "card"
	Cash         PaymentMethod = "cash"
)

// Document is one document as it is rendered. Amounts are int64 minor
// units of Currency; dates are calendar dates (their time of day and zone
// are not read).
type Document struct {
	Kind Kind
	// Language is what the document is written in; "" is English.
	Language Language
	// ID is the record's id; a document without a number is named by it.
	ID     string
	Number string
	Mark   Mark
	// Currency is an ISO 4217 code.
	Currency string
	// Seller issues the document; BillTo is the customer.
	Seller Party
	BillTo Party
	// IssueDate is zero for a document not issued yet ("on issue").
	IssueDate time.Time
	// SupplyDate is the date of supply (Article 226(7)); ServicePeriod
	// the period supplied instead. Either, both or neither may be set.
	SupplyDate    time.Time
	ServicePeriod Period
	// DueDate is zero when the document names none.
	DueDate time.Time
	// PaymentTermsDays are the days net the invoice gives ("Payable
	// within 14 days"; 0 is "Payable on receipt"); nil states no terms.
	PaymentTermsDays *int
	// BankAccounts are where to pay, held by the seller (its Name); an
	// invoice prints them, a void one and a credit note do not.
	BankAccounts []party.BankAccount
	// PurchaseOrder and BuyerReference are the buyer's references, each
	// left out when empty.
	PurchaseOrder  string
	BuyerReference string
	// Corrects is the invoice a credit note corrects; nil for an invoice.
	Corrects *Reference
	// CreditNotes are the numbers of the credit notes against an invoice.
	CreditNotes []string
	// Memo is the document's note to the customer; Reason a credit
	// note's reason. Each prints under its heading when set.
	Memo   string
	Reason string
	Lines  []Line
	// Subtotal is the sum of the lines' net amounts, TaxTotal of their
	// tax, Total of both.
	Subtotal int64
	TaxTotal int64
	Total    int64
	// Credited is what credit notes have taken off the total.
	Credited int64
	Payments []Payment
	// Balance is what is still owed; nil where nothing can be owed (a
	// void invoice, a credit note).
	Balance *int64
	// Created and Modified are the PDF's own dates. They come from the
	// record (issued, last changed), never the clock, so the same document
	// renders to the same bytes.
	Created, Modified time.Time
}

// TaxGroup is the lines of one VAT category and rate (EN 16931's VAT
// breakdown, BG-23): their net amount and their tax.
type TaxGroup struct {
	Category vat.Category
	RateBPS  int64
	Net      int64
	Tax      int64
}

// TaxGroups sums the lines by VAT category and rate, in the order the
// lines first use each (ADR-0021). A line's tax is its share of its
// group's, so the groups add up to TaxTotal exactly, however the source
// rounded.
func (d *Document) TaxGroups() []TaxGroup {
	var groups []TaxGroup
	index := map[TaxGroup]int{}
	for _, l := range d.Lines {
		key := TaxGroup{Category: l.VATCategory, RateBPS: l.TaxRateBPS}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, key)
		}
		groups[i].Net += l.Amount
		groups[i].Tax += l.TaxAmount
	}
	return groups
}

// Paid is the sum of the payments.
func (d *Document) Paid() int64 {
	var sum int64
	for _, p := range d.Payments {
		sum += p.Amount
	}
	return sum
}

// FileName names the PDF: its number, or "draft-<id>" before it has one.
func (d *Document) FileName() string {
	if d.Number == "" {
		return "draft-" + d.ID + ".pdf"
	}
	return d.Number + ".pdf"
}
