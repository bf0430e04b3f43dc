package document

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"codeberg.org/go-pdf/fpdf"
	"github.com/invoiced/invoiced/quantity"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Page geometry in millimetres: A4 with 15 mm margins, and room at the
// bottom for the footer.
const (
	pageW, pageH = 210.0, 297.0
	margin       = 15.0
	contentW     = pageW - 2*margin
	bottom       = pageH - margin - 5
	lineH        = 4.5
	family       = "go"
	dateLayout   = "2006-01-02"
)

// Render draws d on A4 pages and returns the PDF. The font is embedded
// (Go fonts: Latin, Greek and Cyrillic; other scripts draw as boxes, and
// nothing is shaped or laid out right to left), and nothing depends on the
// clock or on map order, so the same document gives the same bytes. Every
// text is drawn as printable makes it, whatever it holds.
func Render(d *Document) ([]byte, error) {
	if d.Created.IsZero() || d.Modified.IsZero() {
		// fpdf would stamp the current time, and the bytes would differ
		// on every render.
		return nil, errors.New("document: Created and Modified must be set")
	}
	r := newRenderer(d.printable())
	r.heading()
	r.billTo()
	r.lineTable()
	r.totals()
	r.taxTable()
	r.paymentTable()
	r.memo()
	var buf bytes.Buffer
	if err := r.pdf.Output(&buf); err != nil {
		return nil, fmt.Errorf("document: render %s: %w", d.FileName(), err)
	}
	return buf.Bytes(), nil
}

type renderer struct {
	pdf *fpdf.Fpdf
	d   *Document
}

func newRenderer(d *Document) *renderer {
	pdf := fpdf.New("P", "mm", "A4", "")
	// Fonts and images are written in map order unless sorted.
	pdf.SetCatalogSort(true)
	pdf.SetCreationDate(d.Created.UTC())
	pdf.SetModificationDate(d.Modified.UTC())
	pdf.SetTitle(d.title(), true)
	pdf.SetAuthor(d.Seller.Name, true)
	pdf.SetCreator("invoiced", true)
	pdf.SetLang("en")
	pdf.SetMargins(margin, margin, margin)
	pdf.SetAutoPageBreak(true, pageH-bottom)
	pdf.AliasNbPages("")
	pdf.AddUTF8FontFromBytes(family, "", goregular.TTF)
	pdf.AddUTF8FontFromBytes(family, "B", gobold.TTF)
	r := &renderer{pdf: pdf, d: d}
	pdf.SetHeaderFuncMode(r.stamp, true)
	pdf.SetFooterFunc(r.footer)
	pdf.AddPage()
	return r
}

// title is the document's name: "Invoice INV-2026-000042", or "Invoice
// (draft)" before it has a number.
func (d *Document) title() string {
	if d.Number == "" {
		return string(d.Kind) + " (draft)"
	}
	return string(d.Kind) + " " + d.Number
}

// stamp draws the mark across every page, under what follows. pdftotext
// does not extract rotated text, so heading also writes it as a line.
func (r *renderer) stamp() {
	if r.d.Mark == MarkNone {
		return
	}
	p := r.pdf
	p.SetFont(family, "B", 110)
	p.SetTextColor(232, 232, 232)
	w := p.GetStringWidth(string(r.d.Mark))
	p.TransformBegin()
	p.TransformRotate(50, pageW/2, pageH/2)
	p.Text(pageW/2-w/2, pageH/2+15, string(r.d.Mark))
	p.TransformEnd()
	p.SetTextColor(0, 0, 0)
}

func (r *renderer) footer() {
	p := r.pdf
	p.SetY(bottom + 3)
	p.SetFont(family, "", 8)
	p.SetTextColor(110, 110, 110)
	p.CellFormat(0, 4, fmt.Sprintf("%s · page %d/{nb}", r.d.title(), p.PageNo()), "", 0, "C", false, 0, "")
	p.SetTextColor(0, 0, 0)
}

// heading draws the seller on the left, the kind with the number and
// dates on the right, and the mark's line under both.
func (r *renderer) heading() {
	p, d := r.pdf, r.d
	top := p.GetY()
	p.SetFont(family, "B", 13)
	p.MultiCell(100, 6, oneLine(d.Seller.Name), "", "L", false)
	p.SetFont(family, "", 9)
	r.partyDetails(100, d.Seller)
	left := p.GetY()

	const x, labelW, valueW = margin + 100, 30.0, contentW - 100 - 30
	p.SetXY(x, top)
	p.SetFont(family, "B", 20)
	p.CellFormat(labelW+valueW, 9, string(d.Kind), "", 2, "R", false, 0, "")
	for _, f := range d.facts() {
		p.SetX(x)
		p.SetFont(family, "", 9)
		p.CellFormat(labelW, lineH+0.5, f.Label, "", 0, "L", false, 0, "")
		p.SetFont(family, "B", 9)
		r.fit(valueW, lineH+0.5, oneLine(f.Value), "R")
		p.Ln(-1)
	}
	p.SetY(max(left, p.GetY()) + 4)
	if d.Mark != MarkNone {
		p.SetFont(family, "B", 11)
		p.SetTextColor(170, 0, 0)
		p.MultiCell(contentW, 6, strings.TrimSpace(string(d.Mark)+" — "+oneLine(d.MarkNote)), "", "L", false)
		p.SetTextColor(0, 0, 0)
		p.Ln(2)
	}
}

// facts are the heading's labelled values: number, dates, then the
// source's own.
func (d *Document) facts() []Fact {
	number, issued := d.Number, "on issue"
	if number == "" {
		number = "assigned on issue"
	}
	if !d.IssueDate.IsZero() {
		issued = d.IssueDate.Format(dateLayout)
	}
	facts := []Fact{{"Number", number}, {"Issue date", issued}}
	if !d.DueDate.IsZero() {
		facts = append(facts, Fact{"Due date", d.DueDate.Format(dateLayout)})
	}
	return append(facts, d.Facts...)
}

// partyDetails writes a party's address lines, tax id and email in width
// w from the current position's x.
func (r *renderer) partyDetails(w float64, party Party) {
	p := r.pdf
	x := p.GetX()
	for _, l := range addressLines(party.Address) {
		p.SetX(x)
		p.MultiCell(w, lineH, l, "", "L", false)
	}
	if party.TaxID != "" {
		p.SetX(x)
		p.MultiCell(w, lineH, "Tax ID: "+oneLine(party.TaxID), "", "L", false)
	}
	if party.Email != "" {
		p.SetX(x)
		p.MultiCell(w, lineH, oneLine(party.Email), "", "L", false)
	}
}

func (r *renderer) billTo() {
	p := r.pdf
	p.SetFont(family, "", 8)
	p.SetTextColor(110, 110, 110)
	p.CellFormat(contentW, lineH, "Bill to", "", 1, "L", false, 0, "")
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
// no field can reach fpdf with a character it cannot encode.
func (d *Document) printable() *Document {
	c := *d
	c.Kind, c.Mark = Kind(multiLine(string(d.Kind))), Mark(multiLine(string(d.Mark)))
	for _, s := range []*string{&c.ID, &c.Number, &c.MarkNote, &c.Currency, &c.Memo} {
		*s = multiLine(*s)
	}
	c.Seller, c.BillTo = d.Seller.printable(), d.BillTo.printable()
	c.Facts = make([]Fact, len(d.Facts))
	for i, f := range d.Facts {
		c.Facts[i] = Fact{Label: multiLine(f.Label), Value: multiLine(f.Value)}
	}
	c.Lines = slices.Clone(d.Lines)
	for i := range c.Lines {
		c.Lines[i].Description = multiLine(c.Lines[i].Description)
	}
	c.Payments = slices.Clone(d.Payments)
	for i := range c.Payments {
		c.Payments[i].Label = multiLine(c.Payments[i].Label)
	}
	return &c
}

func (p Party) printable() Party {
	return Party{Name: multiLine(p.Name), Address: multiLine(p.Address), TaxID: multiLine(p.TaxID), Email: multiLine(p.Email)}
}

// addressLines splits an address on newlines, leaving out blank lines.
func addressLines(s string) []string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(oneLine(l)); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// english groups quantities as money.Display groups amounts.
var english = message.NewPrinter(language.English)

// Quantity is a line's quantity as people read it, grouped as amounts are
// (ADR-0016): 1234567 is "1,234,567", 7.5 "7.5". The PDF and the invoice
// page both show it so, from here.
func Quantity(q quantity.Quantity) string { return q.Format("en") }

// Percent renders basis points as a rate: 1900 is "19 %", 825 "8.25 %".
func Percent(bps int64) string {
	s := fmt.Sprintf("%d.%02d", bps/100, bps%100)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".") + " %"
}
