// Package document renders what the back office sends a customer — an
// invoice, and in the same shape a credit note — to PDF, in-process.
//
// A Document is the common model: who issues it and whom it bills, its
// number and dates, lines, tax grouped by rate, totals, payments and what
// is still owed. Its source (the invoices package) fills it; Render draws
// it the same way for every kind, to the same bytes for the same document.
package document

import (
	"cmp"
	"slices"
	"time"

	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
)

// Kind is what a document is; it heads the page.
type Kind string

// The kinds.
const (
	KindInvoice    Kind = "Invoice"
	KindCreditNote Kind = "Credit note"
)

// Mark stamps a document that is not (or no longer) a valid one.
type Mark string

// The marks: a draft has no number yet and may still change; a void
// invoice is not to be paid.
const (
	MarkNone  Mark = ""
	MarkDraft Mark = "DRAFT"
	MarkVoid  Mark = "VOID"
)

// Party is the seller or whom a document bills.
type Party struct {
	Name string
	// Address is one or more lines separated by "\n".
	Address string
	TaxID   string
	Email   string
}

// Line is one line: Amount is quantity × unit amount, TaxAmount its share
// of its VAT category and rate's tax, both in minor units of the
// document's currency; Unit is a UN/ECE Recommendation 20 code.
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

// Fact is a labelled value in the document's heading besides its number
// and dates, such as the invoice a credit note credits.
type Fact struct {
	Label, Value string
}

// Payment is money received against the document (negative for one
// reversed), on a calendar date.
type Payment struct {
	Date   time.Time
	Label  string
	Amount int64
}

// Document is one document as it is rendered. Amounts are int64 minor
// units of Currency.
type Document struct {
	Kind Kind
	// ID is the record's id; a document without a number is named by it.
	ID     string
	Number string
	Mark   Mark
	// MarkNote is the sentence under a mark ("the number is assigned on
	// issue").
	MarkNote string
	Currency string
	Seller   Party
	BillTo   Party
	// IssueDate and DueDate are calendar dates. A zero IssueDate is a
	// document not issued yet ("on issue"); a zero DueDate is left out.
	IssueDate time.Time
	DueDate   time.Time
	Facts     []Fact
	Memo      string
	Lines     []Line
	Subtotal  int64
	TaxTotal  int64
	Total     int64
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

// TaxGroup is the lines of one tax rate: their net amount and their tax.
type TaxGroup struct {
	RateBPS int64
	Net     int64
	Tax     int64
}

// TaxGroups sums the lines by tax rate, lowest rate first. Each line's tax
// was rounded on its own, so the groups add up to TaxTotal exactly; no sum
// exceeds the subtotal or tax total the source has checked.
func (d *Document) TaxGroups() []TaxGroup {
	var groups []TaxGroup
	for _, l := range d.Lines {
		i, found := slices.BinarySearchFunc(groups, l.TaxRateBPS, func(g TaxGroup, rate int64) int { return cmp.Compare(g.RateBPS, rate) })
		if !found {
			groups = slices.Insert(groups, i, TaxGroup{RateBPS: l.TaxRateBPS})
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
