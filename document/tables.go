package document

import (
	"fmt"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"golang.org/x/text/number"
)

type column struct {
	title string
	w     float64
	align string
}

// The widths of each table's columns, in millimetres: each fills the
// content width (180 mm). A value wider than its column (a long unit name,
// an amount of 2^53−1 minor units) is drawn smaller rather than running
// into the next one (fit).
var (
	lineWidths    = []float64{66, 16, 22, 28, 16, 32}
	vatWidths     = []float64{80, 20, 40, 40}
	paymentWidths = []float64{40, 90, 50}
)

// columns names widths with titles, aligned as aligns says (L or R per
// column).
func columns(widths []float64, aligns string, titles ...string) []column {
	cols := make([]column, len(widths))
	for i, w := range widths {
		cols[i] = column{titles[i], w, aligns[i : i+1]}
	}
	return cols
}

func (r *renderer) lineColumns() []column {
	t := r.t
	return columns(lineWidths, "LRLRRR", t.description, t.quantity, t.unit, t.unitPrice, t.vat, t.netAmount)
}

const rowH = 6.0

func (r *renderer) tableHeader(cols []column) {
	p := r.pdf
	p.SetFont(family, "B", 8.5)
	p.SetFillColor(238, 238, 238)
	for _, c := range cols {
		p.CellFormat(c.w, rowH, c.title, "", 0, c.align, true, 0, "")
	}
	p.Ln(-1)
	p.SetFont(family, "", 9)
}

// newPage continues a table on the next page under its column titles.
func (r *renderer) newPage(cols []column) {
	r.pdf.AddPage()
	r.tableHeader(cols)
}

// titled starts a titled part where its title and rows more rows fit, on
// a new page otherwise.
func (r *renderer) titled(title string, rows int) {
	p := r.pdf
	if p.GetY()+float64(rows+1)*rowH > bottom {
		p.AddPage()
	}
	p.SetFont(family, "B", 10)
	p.CellFormat(contentW, rowH+1, title, "", 1, "L", false, 0, "")
	p.SetFont(family, "", 9)
}

// section starts a titled table where its title, column titles and first
// row fit, on a new page otherwise.
func (r *renderer) section(title string, cols []column) {
	r.titled(title, 2)
	r.tableHeader(cols)
}

// row draws one row of single-line cells under a rule.
func (r *renderer) row(cols []column, values ...string) {
	p := r.pdf
	if p.GetY()+rowH > bottom {
		r.newPage(cols)
	}
	for i, c := range cols {
		r.fit(c.w, rowH, values[i], c.align)
	}
	p.Ln(-1)
	r.rule(cols)
}

// rule underlines the row just drawn across the table's width.
func (r *renderer) rule(cols []column) {
	w := 0.0
	for _, c := range cols {
		w += c.w
	}
	p := r.pdf
	p.SetDrawColor(200, 200, 200)
	p.Line(margin, p.GetY(), margin+w, p.GetY())
	p.SetDrawColor(0, 0, 0)
}

// lineTable draws the lines, repeating the column titles on each page.
func (r *renderer) lineTable() {
	p, d := r.pdf, r.d
	p.SetFont(family, "", 8)
	p.SetTextColor(110, 110, 110)
	p.CellFormat(contentW, lineH, fmt.Sprintf(r.t.amountsIn, d.Currency), "", 1, "R", false, 0, "")
	p.SetTextColor(0, 0, 0)
	cols := r.lineColumns()
	r.tableHeader(cols)
	if len(d.Lines) == 0 {
		r.row(cols[:1], r.t.noLines)
	}
	for _, l := range d.Lines {
		r.lineRow(cols, l)
	}
	p.Ln(4)
}

// rateOf is how a line or a group shows its VAT: the rate of a standard
// rated one ("19 %"), the category's code for another (its name and
// wording are in the VAT breakdown), with its rate when it has one
// ("L 7 %").
func (r *renderer) rateOf(c vat.Category, bps int64) string {
	switch {
	case c == vat.Standard || c == "":
		return r.lang.Percent(bps)
	case bps != 0:
		return string(c) + " " + r.lang.Percent(bps)
	}
	return string(c)
}

// lineRow draws a line: its description wrapped in the first column, its
// numbers on the description's first line. A row starts on a new page
// unless it fits here; one taller than a page breaks between its lines.
func (r *renderer) lineRow(cols []column, l Line) {
	p, cur, lang := r.pdf, r.d.Currency, r.lang
	desc := p.SplitText(multiLine(l.Description), cols[0].w)
	if len(desc) == 0 {
		desc = []string{""}
	}
	h := float64(len(desc))*lineH + 2
	if p.GetY()+h > bottom && h <= bottom-margin-rowH {
		r.newPage(cols)
	}
	values := []string{lang.Quantity(l.Quantity), oneLine(lang.Unit(l.Unit, l.Quantity)), lang.Amount(l.UnitAmount, cur),
		oneLine(r.rateOf(l.VATCategory, l.TaxRateBPS)), lang.Amount(l.Amount, cur)}
	p.SetY(p.GetY() + 1)
	for i, s := range desc {
		if i > 0 && p.GetY()+lineH > bottom {
			r.newPage(cols)
		}
		p.CellFormat(cols[0].w, lineH, s, "", 0, "L", false, 0, "")
		for j, v := range values {
			if i == 0 {
				r.fit(cols[j+1].w, lineH, v, cols[j+1].align)
			}
		}
		p.Ln(lineH)
	}
	p.SetY(p.GetY() + 1)
	r.rule(cols)
}

// totals draws the totals, then what was credited and paid and what is
// still owed, right-aligned under the lines.
func (r *renderer) totals() {
	p, d, t := r.pdf, r.d, r.t
	type total struct {
		label string
		value int64
		style string
	}
	rows := []total{{t.subtotal, d.Subtotal, ""}, {t.vatTotal, d.TaxTotal, ""}, {t.total, d.Total, "B"}}
	if d.Credited != 0 {
		rows = append(rows, total{t.credited, d.Credited, ""})
	}
	if len(d.Payments) > 0 {
		rows = append(rows, total{t.paid, d.Paid(), ""})
	}
	if d.Balance != nil {
		rows = append(rows, total{t.balanceDue, *d.Balance, "B"})
	}
	if p.GetY()+float64(len(rows))*rowH > bottom {
		p.AddPage()
	}
	for _, row := range rows {
		p.SetFont(family, row.style, 10)
		p.SetX(margin + contentW - 100)
		r.fit(45, rowH, row.label, "L")
		r.fit(55, rowH, r.lang.Money(row.value, d.Currency), "R")
		p.Ln(-1)
	}
	p.Ln(4)
}

// vatBreakdown draws the VAT per category and rate (Article 226(8) to
// (10)), then what the categories present must say (Article 226(11) and
// (11a), vat.Wording) and the exemption reasons the lines give beyond
// their category's default.
func (r *renderer) vatBreakdown() {
	groups, cur, t, lang := r.d.TaxGroups(), r.d.Currency, r.t, r.lang
	if len(groups) == 0 {
		return
	}
	cols := columns(vatWidths, "LRRR", t.category, t.rate, t.taxableAmount, t.vatAmount)
	r.section(t.vatBreakdown, cols)
	for _, g := range groups {
		name := strings.TrimSpace(string(g.Category) + " " + g.Category.Name(string(lang)))
		if g.Category == "" {
			name = ""
		}
		rate := lang.Percent(g.RateBPS)
		r.row(cols, oneLine(name), rate, lang.Amount(g.Net, cur), lang.Amount(g.Tax, cur))
	}
	r.pdf.Ln(2)
	var notes []string
	seen := map[vat.Category]bool{}
	for _, g := range groups {
		if seen[g.Category] {
			continue
		}
		seen[g.Category] = true
		if w := vat.Wording(g.Category, string(lang)); w != "" {
			notes = append(notes, w)
		}
		notes = append(notes, r.exemptions(g.Category)...)
	}
	p := r.pdf
	p.SetFont(family, "", 8.5)
	for _, n := range notes {
		if p.GetY()+lineH > bottom {
			p.AddPage()
		}
		p.MultiCell(contentW, lineH, n, "", "L", false)
	}
	p.Ln(4)
}

// exemptions are the reasons (text and VATEX code) the lines of c give,
// each once, in the order of the lines, leaving out the category's default
// (vat.DefaultExemption), which its wording already says in the
// document's language.
func (r *renderer) exemptions(c vat.Category) []string {
	defReason, defCode := vat.DefaultExemption(c)
	var out []string
	for _, l := range r.d.Lines {
		if l.VATCategory != c || (l.ExemptionReason == "" && l.ExemptionCode == "") ||
			(l.ExemptionReason == defReason && l.ExemptionCode == defCode) {
			continue
		}
		s := oneLine(l.ExemptionReason)
		switch {
		case s == "":
			s = oneLine(l.ExemptionCode)
		case l.ExemptionCode != "":
			s += " (" + oneLine(l.ExemptionCode) + ")"
		}
		if s = r.labelled(r.t.exemptionReason, s); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// paymentDetails draws how to pay an invoice (Article 226 asks for none
// of it; §14 UStG and the CGI's Article 242 nonies A ask for the terms):
// its terms and the seller's bank accounts. A void invoice and a credit
// note have nothing to pay.
func (r *renderer) paymentDetails() {
	d, t := r.d, r.t
	if d.Kind != KindInvoice || d.Mark == MarkVoid || (d.PaymentTermsDays == nil && len(d.BankAccounts) == 0) {
		return
	}
	var lines []string
	if days := d.PaymentTermsDays; days != nil {
		lines = append(lines, r.terms(*days))
	}
	if len(d.BankAccounts) > 0 {
		lines = append(lines, r.labelled(t.accountHolder, oneLine(d.Seller.Name)))
	}
	for _, b := range d.BankAccounts {
		s := r.labelled(t.iban, oneLine(b.IBAN.String()))
		if b.BIC != "" {
			s += " · " + r.labelled(t.bic, oneLine(string(b.BIC)))
		}
		lines = append(lines, s)
	}
	payload, qr := d.EPCPayload()
	var code modules
	if qr {
		var err error
		if code, err = qrModules(payload); err != nil {
			r.pdf.SetError(fmt.Errorf("EPC QR code: %w", err))
			return
		}
		lines = append(lines, t.scanToPay)
	}
	p := r.pdf
	textW := contentW
	if qr {
		// The code sits right of the text; a page break comes before the
		// title when it would not fit under it.
		if p.GetY()+rowH+1+qrSize > bottom {
			p.AddPage()
		}
		textW = contentW - qrSize - 5
	}
	r.titled(t.payment, len(lines))
	top := p.GetY()
	for _, l := range lines {
		p.MultiCell(textW, lineH, l, "", "L", false)
	}
	if qr {
		r.drawQR(code, margin+contentW-qrSize, top, qrSize)
		p.SetY(max(p.GetY(), top+qrSize))
	}
	p.Ln(4)
}

// drawQR draws code as black squares in a side×side box at (x, y), its
// quiet zone (four modules, which ISO/IEC 18004 asks for) inside the box.
func (r *renderer) drawQR(code modules, x, y, side float64) {
	p := r.pdf
	n := float64(len(code) + 8)
	m := side / n
	p.SetFillColor(0, 0, 0)
	for row, cells := range code {
		for col, dark := range cells {
			if dark {
				p.Rect(x+(float64(col)+4)*m, y+(float64(row)+4)*m, m, m, "F")
			}
		}
	}
}

// terms is the payment terms' sentence for days net.
func (r *renderer) terms(days int) string { return r.lang.Terms(days) }

// Terms is the payment terms' sentence for days net in l: "Payable
// within 14 days", "Zahlbar innerhalb von 1 Tag", "Payable à réception"
// for 0. The PDF prints it and an e-invoice states it (EN 16931 BT-20).
func (l Language) Terms(days int) string {
	t := l.locale().text
	if days == 0 {
		return t.termsNow
	}
	format := t.termsDays
	if q, err := quantity.Whole(int64(days)); err == nil && !q.Plural(string(l)) {
		format = t.termsDay
	}
	return fmt.Sprintf(format, l.locale().printer.Sprint(number.Decimal(days)))
}

func (r *renderer) paymentTable() {
	if len(r.d.Payments) == 0 {
		return
	}
	t := r.t
	cols := columns(paymentWidths, "LLR", t.date, t.paymentColumn, t.amount)
	r.section(t.payments, cols)
	for _, pm := range r.d.Payments {
		r.row(cols, r.lang.Date(pm.Date), oneLine(r.paymentLabel(pm)), r.lang.Money(pm.Amount, r.d.Currency))
	}
	r.pdf.Ln(4)
}

// paymentLabel names pm in the document's language: "Überweisung ·
// RF-2211", the reference alone for a method it has no word for,
// "Rückbuchung: <reason>" for a reversal.
func (r *renderer) paymentLabel(pm Payment) string {
	t := r.t
	if pm.Reversal {
		return t.reversed + t.colon + pm.Reference
	}
	name := map[PaymentMethod]string{BankTransfer: t.bankTransfer, Card: t.card, Cash: t.cash}[pm.Method]
	switch {
	case name == "" && pm.Reference == "":
		return t.payment
	case name == "":
		return pm.Reference
	case pm.Reference != "":
		return name + " · " + pm.Reference
	}
	return name
}

// text draws a titled text (the memo, a credit note's reason) when there
// is one.
func (r *renderer) text(title, s string) {
	if s == "" {
		return
	}
	r.titled(title, 1)
	r.pdf.MultiCell(contentW, lineH, multiLine(s), "", "L", false)
	r.pdf.Ln(4)
}
