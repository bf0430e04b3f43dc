package document

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"codeberg.org/go-pdf/fpdf"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
)

// Page geometry in millimetres: A4 with 15 mm margins, and room at the
// bottom for the footer. The heading gives the seller the left sideW and
// its facts the rest, a label of factLabelW and its value.
const (
	pageW, pageH = 210.0, 297.0
	margin       = 15.0
	contentW     = pageW - 2*margin
	bottom       = pageH - margin - 5
	lineH        = 4.5
	sideW        = 95.0
	factLabelW   = 37.0
	family       = "go"
)

// Render draws d on A4 pages and returns the PDF, in d's language. The
// font is embedded (Go fonts: Latin, Greek and Cyrillic; other scripts
// draw as boxes, and nothing is shaped or laid out right to left), and
// nothing depends on the clock or on map order, so the same document gives
// the same bytes. Every text is drawn as printable makes it, whatever it
// holds.
func Render(d *Document) ([]byte, error) {
	r, err := draw(d)
	if err != nil {
		return nil, err
	}
	return r.output()
}

// draw checks d and draws its pages.
func draw(d *Document) (*renderer, error) {
	if d.Created.IsZero() || d.Modified.IsZero() {
		// fpdf would stamp the current time, and the bytes would differ
		// on every render.
		return nil, errors.New("document: Created and Modified must be set")
	}
	if d.Kind != KindInvoice && d.Kind != KindCreditNote {
		return nil, fmt.Errorf("document: kind %q is neither %q nor %q", d.Kind, KindInvoice, KindCreditNote)
	}
	if d.Language != "" {
		if _, err := ParseLanguage(string(d.Language)); err != nil {
			return nil, fmt.Errorf("document: %w", err)
		}
	}
	r := newRenderer(d.printable())
	r.heading()
	r.billTo()
	r.lineTable()
	r.totals()
	r.vatBreakdown()
	r.paymentDetails()
	r.paymentTable()
	r.text(r.t.note, r.d.Memo)
	r.text(r.t.reason, r.d.Reason)
	return r, nil
}

// output closes the document and returns its bytes.
func (r *renderer) output() ([]byte, error) {
	var buf bytes.Buffer
	if err := r.pdf.Output(&buf); err != nil {
		return nil, fmt.Errorf("document: render %s: %w", r.d.FileName(), err)
	}
	return buf.Bytes(), nil
}

type renderer struct {
	pdf  *fpdf.Fpdf
	d    *Document
	lang Language
	t    *labels
}

func newRenderer(d *Document) *renderer {
	lang := d.Language.locale().lang
	r := &renderer{d: d, lang: lang, t: lang.locale().text}
	pdf := fpdf.New("P", "mm", "A4", "")
	r.pdf = pdf
	// Fonts and images are written in map order unless sorted.
	pdf.SetCatalogSort(true)
	pdf.SetCreationDate(d.Created.UTC())
	pdf.SetModificationDate(d.Modified.UTC())
	pdf.SetTitle(r.title(), true)
	pdf.SetAuthor(d.Seller.Name, true)
	pdf.SetCreator("invoiced", true)
	pdf.SetLang(string(lang))
	pdf.SetMargins(margin, margin, margin)
	pdf.SetAutoPageBreak(true, pageH-bottom)
	pdf.AliasNbPages("")
	pdf.AddUTF8FontFromBytes(family, "", goregular.TTF)
	pdf.AddUTF8FontFromBytes(family, "B", gobold.TTF)
	pdf.SetHeaderFuncMode(r.stamp, true)
	pdf.SetFooterFunc(r.footer)
	pdf.AddPage()
	return r
}

// kind is the document's kind in its language: "Invoice", "Rechnung".
func (r *renderer) kind() string {
	if r.d.Kind == KindCreditNote {
		return r.t.creditNote
	}
	return r.t.invoice
}

// title is the document's name: "Invoice INV-2026-000042", or "Invoice
// (draft)" before it has a number.
func (r *renderer) title() string {
	if r.d.Number == "" {
		return r.kind() + " " + r.t.draftTitle
	}
	return r.kind() + " " + r.d.Number
}

// mark is the stamp's word and the sentence under the heading, "" for
// none.
func (r *renderer) mark() (word, note string) {
	switch r.d.Mark {
	case MarkDraft:
		return r.t.draft, r.t.draftNote
	case MarkVoid:
		return r.t.void, r.t.voidNote
	}
	return "", ""
}

// stamp draws the mark across every page, under what follows. pdftotext
// does not extract rotated text, so heading also writes it as a line.
func (r *renderer) stamp() {
	word, _ := r.mark()
	if word == "" {
		return
	}
	p := r.pdf
	p.SetFont(family, "B", 110)
	// A longer word ("BROUILLON") is drawn smaller to stay on the page.
	for size := 110.0; p.GetStringWidth(word) > pageH-2*margin-40; size -= 5 {
		p.SetFontSize(size)
	}
	p.SetTextColor(232, 232, 232)
	w := p.GetStringWidth(word)
	p.TransformBegin()
	p.TransformRotate(50, pageW/2, pageH/2)
	p.Text(pageW/2-w/2, pageH/2+15, word)
	p.TransformEnd()
	p.SetTextColor(0, 0, 0)
}

func (r *renderer) footer() {
	p := r.pdf
	p.SetY(bottom + 3)
	p.SetFont(family, "", 8)
	p.SetTextColor(110, 110, 110)
	p.CellFormat(0, 4, fmt.Sprintf("%s · %s %d/{nb}", r.title(), r.t.page, p.PageNo()), "", 0, "C", false, 0, "")
	p.SetTextColor(0, 0, 0)
}

// heading draws the seller on the left, the kind with the number, dates
// and references on the right, and the mark's line under both.
func (r *renderer) heading() {
	p, d := r.pdf, r.d
	top := p.GetY()
	p.SetFont(family, "B", 13)
	p.MultiCell(sideW, 6, oneLine(d.Seller.Name), "", "L", false)
	p.SetFont(family, "", 9)
	r.partyDetails(sideW, d.Seller)
	left := p.GetY()

	const x, valueW = margin + sideW, contentW - sideW - factLabelW
	p.SetXY(x, top)
	p.SetFont(family, "B", 20)
	r.fit(factLabelW+valueW, 9, r.kind(), "R")
	p.Ln(-1)
	for _, f := range r.facts() {
		p.SetX(x)
		p.SetFont(family, "", 9)
		r.fit(factLabelW, lineH+0.5, f.label, "L")
		p.SetFont(family, "B", 9)
		r.fit(valueW, lineH+0.5, oneLine(f.value), "R")
		p.Ln(-1)
	}
	p.SetY(max(left, p.GetY()) + 4)
	if word, note := r.mark(); word != "" {
		p.SetFont(family, "B", 11)
		p.SetTextColor(170, 0, 0)
		p.MultiCell(contentW, 6, word+" — "+note, "", "L", false)
		p.SetTextColor(0, 0, 0)
		p.Ln(2)
	}
}

// fact is a labelled value of the heading.
type fact struct {
	label, value string
}

// facts are the heading's labelled values: number and dates (Article
// 226(1), (2), (7)), then the references to other documents and the
// buyer's.
func (r *renderer) facts() []fact {
	d, t, l := r.d, r.t, r.lang
	number, issued := d.Number, t.onIssue
	if number == "" {
		number = t.numberOnIssue
	}
	if !d.IssueDate.IsZero() {
		issued = l.Date(d.IssueDate)
	}
	facts := []fact{{t.number, number}, {t.issueDate, issued}}
	if !d.SupplyDate.IsZero() {
		facts = append(facts, fact{t.supplyDate, l.Date(d.SupplyDate)})
	}
	if !d.ServicePeriod.IsZero() {
		start, end := d.ServicePeriod.Start, d.ServicePeriod.End
		if start.IsZero() {
			start = end
		}
		if end.IsZero() {
			end = start
		}
		facts = append(facts, fact{t.servicePeriod, l.Period(start, end)})
	}
	if !d.DueDate.IsZero() {
		facts = append(facts, fact{t.dueDate, l.Date(d.DueDate)})
	}
	if c := d.Corrects; c != nil {
		facts = append(facts, fact{t.correctsInvoice, c.Number})
		if !c.Date.IsZero() {
			facts = append(facts, fact{t.invoiceDate, l.Date(c.Date)})
		}
	}
	if len(d.CreditNotes) > 0 {
		facts = append(facts, fact{t.creditNotes, strings.Join(d.CreditNotes, ", ")})
	}
	if d.PurchaseOrder != "" {
		facts = append(facts, fact{t.purchaseOrder, d.PurchaseOrder})
	}
	if d.BuyerReference != "" {
		facts = append(facts, fact{t.buyerReference, d.BuyerReference})
	}
	return facts
}

// labelled is "label: value" in the document's language.
func (r *renderer) labelled(label, value string) string {
	return label + r.t.colon + value
}

// partyLines are what the document says of a party under its name: its
// trading name, postal address, identifiers, registration and contact.
func (r *renderer) partyLines(party Party) []string {
	t, a := r.t, party.Address
	var lines []string
	add := func(s string) {
		if s = strings.TrimSpace(oneLine(s)); s != "" {
			lines = append(lines, s)
		}
	}
	if party.TradingName != "" && party.TradingName != party.Name {
		add(r.labelled(t.tradingAs, party.TradingName))
	}
	for _, l := range a.Lines {
		add(l)
	}
	add(oneLine(a.Postcode) + " " + oneLine(a.City))
	add(a.Subdivision)
	if a.Country != "" {
		add(r.lang.Country(a.Country))
	}
	email := party.Email
	if email == party.Contact.Email {
		email = ""
	}
	for _, f := range []fact{
		{t.vatID, string(party.VATID)}, {t.taxNumber, party.TaxNumber}, {t.registration, party.Registration},
		{t.contact, party.Contact.Name}, {t.phone, party.Contact.Phone}, {t.email, party.Contact.Email}, {t.email, email},
	} {
		if f.value != "" {
			add(r.labelled(f.label, f.value))
		}
	}
	return lines
}

// partyDetails writes a party's lines in width w from the current
// position's x.
func (r *renderer) partyDetails(w float64, party Party) {
	p := r.pdf
	x := p.GetX()
	for _, l := range r.partyLines(party) {
		p.SetX(x)
		p.MultiCell(w, lineH, l, "", "L", false)
	}
}

func (r *renderer) billTo() {
	p := r.pdf
	p.SetFont(family, "", 8)
	p.SetTextColor(110, 110, 110)
	p.CellFormat(contentW, lineH, r.t.billTo, "", 1, "L", false, 0, "")
	p.SetTextColor(0, 0, 0)
	p.SetFont(family, "B", 11)
	p.MultiCell(110, 5.5, oneLine(r.d.BillTo.Name), "", "L", false)
	p.SetFont(family, "", 9)
	r.partyDetails(110, r.d.BillTo)
	p.Ln(5)
}

// fit writes s in a cell of width w, shrinking the font (down to 5 pt)
// rather than letting a long amount run into the next column.
func (r *renderer) fit(w, h float64, s, align string) {
	p := r.pdf
	size, _ := p.GetFontSize()
	for cur := size; cur > 5 && p.GetStringWidth(s) > w-2*p.GetCellMargin(); {
		cur -= 0.5
		p.SetFontSize(cur)
	}
	p.CellFormat(w, h, s, "", 0, align, false, 0, "")
	p.SetFontSize(size)
}

// oneLine makes a field printable on one line: control characters
// (newlines included) become spaces.
func oneLine(s string) string { return printable(s, false) }

// multiLine keeps a text's newlines and makes every other control
// character (a tab, a carriage return) a space.
func multiLine(s string) string { return printable(s, true) }

// Replacement stands in, on a document, for invalid UTF-8 and for every
// character outside Unicode's Basic Multilingual Plane (above U+FFFF: an
// emoji such as 🚀, a rare Han character, a mathematical letter). fpdf's
// UTF-8 fonts map characters through 16-bit tables and fail on those (an
// error, or an index out of range: a panic), and the Go fonts draw none
// of them; U+FFFD has a glyph in both Go fonts, so the reader sees that
// something stood there. A character of the plane without a glyph still
// draws as a box and keeps its text (docs/documents.md, "Amounts and scripts").
const Replacement = '\uFFFD'

// printable is s as the document draws it: invalid UTF-8 and characters
// above U+FFFF become Replacement, control characters spaces (newlines
// too unless newlines), and default-ignorable ones (a zero-width joiner
// between emoji, a variation selector, a soft hyphen) are left out, as
// Unicode asks of a renderer that does not support them: the Go fonts
// have no glyph for them, so fpdf would draw a box.
func printable(s string, newlines bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r > 0xFFFF:
			return Replacement
		case unicode.IsControl(r):
			if r == '\n' && newlines {
				return r
			}
			return ' '
		case ignorable(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, string(Replacement)))
}

// ignorable reports whether r is a Default_Ignorable_Code_Point of the
// BMP, as Unicode derives the property (DerivedCoreProperties.txt):
// Other_Default_Ignorable_Code_Point, format characters and variation
// selectors, less white space, the interlinear annotation characters and
// the prepended concatenation marks (visible signs such as U+0600).
func ignorable(r rune) bool {
	if r < 0xAD || unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark) || (r >= 0xFFF9 && r <= 0xFFFB) {
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// printable is a copy of d with every text it draws made printable
// (keeping newlines, which the fields drawn on one line then drop), so
// no field can reach fpdf with a character it cannot encode. The caller's
// document, its slices included, is left as it was.
func (d *Document) printable() *Document {
	c := *d
	for _, s := range []*string{&c.ID, &c.Number, &c.Currency, &c.PurchaseOrder, &c.BuyerReference, &c.Memo, &c.Reason} {
		*s = multiLine(*s)
	}
	c.Seller, c.BillTo = d.Seller.printable(), d.BillTo.printable()
	if d.Corrects != nil {
		c.Corrects = &Reference{Number: multiLine(d.Corrects.Number), Date: d.Corrects.Date}
	}
	c.CreditNotes = printables(d.CreditNotes)
	c.BankAccounts = slices.Clone(d.BankAccounts)
	for i, b := range c.BankAccounts {
		c.BankAccounts[i] = party.BankAccount{IBAN: party.IBAN(multiLine(string(b.IBAN))), BIC: party.BIC(multiLine(string(b.BIC)))}
	}
	c.Lines = slices.Clone(d.Lines)
	for i := range c.Lines {
		l := &c.Lines[i]
		l.Description, l.Unit = multiLine(l.Description), multiLine(l.Unit)
		l.VATCategory = vat.Category(multiLine(string(l.VATCategory)))
		l.ExemptionReason, l.ExemptionCode = multiLine(l.ExemptionReason), multiLine(l.ExemptionCode)
	}
	c.Payments = slices.Clone(d.Payments)
	for i := range c.Payments {
		c.Payments[i].Reference = multiLine(c.Payments[i].Reference)
	}
	return &c
}

func (p Party) printable() Party {
	c := p
	for _, s := range []*string{&c.Name, &c.TradingName, &c.TaxNumber, &c.Registration, &c.Email,
		&c.Address.Postcode, &c.Address.City, &c.Address.Subdivision, &c.Contact.Name, &c.Contact.Phone, &c.Contact.Email} {
		*s = multiLine(*s)
	}
	c.VATID = party.VATID(multiLine(string(p.VATID)))
	c.Address.Country = party.Country(multiLine(string(p.Address.Country)))
	c.Address.Lines = printables(p.Address.Lines)
	return c
}

// printables is a copy of ss, each made printable.
func printables(ss []string) []string {
	if ss == nil {
		return nil
	}
	c := make([]string, len(ss))
	for i, s := range ss {
		c[i] = multiLine(s)
	}
	return c
}

// Quantity is a line's quantity as people read it in English, grouped as
// amounts are (ADR-0016): 1234567 is "1,234,567", 7.5 "7.5". The invoice
// page shows it so, from here.
func Quantity(q quantity.Quantity) string { return English.Quantity(q) }

// Percent renders basis points as a rate in English: 1900 is "19 %", 825
// "8.25 %".
func Percent(bps int64) string { return English.Percent(bps) }
