package document

import (
	"github.com/invoiced/invoiced/money"
)

type column struct {
	title string
	w     float64
	align string
}

// The columns of each table, in millimetres; the line table fills the
// content width (180 mm), its amount columns hold 2^53−1 minor units
// grouped ("90,071,992,547,409.91") at 9 pt.
var (
	lineColumns    = []column{{"Description", 80, "L"}, {"Qty", 18, "R"}, {"Unit price", 32, "R"}, {"Tax", 16, "R"}, {"Amount", 34, "R"}}
	taxColumns     = []column{{"Tax rate", 30, "R"}, {"Net", 45, "R"}, {"Tax", 45, "R"}}
	paymentColumns = []column{{"Date", 30, "L"}, {"Payment", 100, "L"}, {"Amount", 50, "R"}}
)

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

// section starts a titled table where its title, column titles and first
// row fit, on a new page otherwise.
func (r *renderer) section(title string, cols []column) {
	p := r.pdf
	if p.GetY()+3*rowH > bottom {
		p.AddPage()
	}
	p.SetFont(family, "B", 10)
	p.CellFormat(contentW, rowH+1, title, "", 1, "L", false, 0, "")
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
	p.CellFormat(contentW, lineH, "Amounts in "+d.Currency, "", 1, "R", false, 0, "")
	p.SetTextColor(0, 0, 0)
	r.tableHeader(lineColumns)
	if len(d.Lines) == 0 {
		r.row(lineColumns[:1], "No lines.")
	}
	for _, l := range d.Lines {
		r.lineRow(l)
	}
	p.Ln(4)
}

// lineRow draws a line: its description wrapped in the first column, its
// numbers on the description's first line. A row starts on a new page
// unless it fits here; one taller than a page breaks between its lines.
func (r *renderer) lineRow(l Line) {
	p, cur := r.pdf, r.d.Currency
	desc := p.SplitText(multiLine(l.Description), lineColumns[0].w)
	if len(desc) == 0 {
		desc = []string{""}
	}
	h := float64(len(desc))*lineH + 2
	if p.GetY()+h > bottom && h <= bottom-margin-rowH {
		r.newPage(lineColumns)
	}
	values := []string{Quantity(l.Quantity), money.Grouped(l.UnitAmount, cur), Percent(l.TaxRateBPS), money.Grouped(l.Amount, cur)}
	p.SetY(p.GetY() + 1)
	for i, s := range desc {
		if i > 0 && p.GetY()+lineH > bottom {
			r.newPage(lineColumns)
		}
		p.CellFormat(lineColumns[0].w, lineH, s, "", 0, "L", false, 0, "")
		for j, v := range values {
			if i == 0 {
				r.fit(lineColumns[j+1].w, lineH, v, "R")
			}
		}
		p.Ln(lineH)
	}
	p.SetY(p.GetY() + 1)
	r.rule(lineColumns)
}

// totals draws the totals, then what was credited and paid and what is
// still owed, right-aligned under the lines.
func (r *renderer) totals() {
	p, d := r.pdf, r.d
	type total struct {
		label string
		value int64
		style string
	}
	rows := []total{{"Subtotal", d.Subtotal, ""}, {"Tax", d.TaxTotal, ""}, {"Total", d.Total, "B"}}
	if d.Credited != 0 {
		rows = append(rows, total{"Credited", d.Credited, ""})
	}
	if len(d.Payments) > 0 {
		rows = append(rows, total{"Paid", d.Paid(), ""})
	}
	if d.Balance != nil {
		rows = append(rows, total{"Balance due", *d.Balance, "B"})
	}
	if p.GetY()+float64(len(rows))*rowH > bottom {
		p.AddPage()
	}
	for _, t := range rows {
		p.SetFont(family, t.style, 10)
		p.SetX(margin + contentW - 100)
		p.CellFormat(45, rowH, t.label, "", 0, "L", false, 0, "")
		r.fit(55, rowH, money.Display(t.value, d.Currency), "R")
		p.Ln(-1)
	}
	p.Ln(4)
}

func (r *renderer) taxTable() {
	groups, cur := r.d.TaxGroups(), r.d.Currency
	if len(groups) == 0 {
		return
	}
	r.section("Tax by rate", taxColumns)
	for _, g := range groups {
		r.row(taxColumns, Percent(g.RateBPS), money.Grouped(g.Net, cur), money.Grouped(g.Tax, cur))
	}
	r.pdf.Ln(4)
}

func (r *renderer) paymentTable() {
	if len(r.d.Payments) == 0 {
		return
	}
	r.section("Payments", paymentColumns)
	for _, pm := range r.d.Payments {
		r.row(paymentColumns, pm.Date.Format(dateLayout), oneLine(pm.Label), money.Display(pm.Amount, r.d.Currency))
	}
	r.pdf.Ln(4)
}

func (r *renderer) memo() {
	if r.d.Memo == "" {
		return
	}
	p := r.pdf
	if p.GetY()+2*rowH > bottom {
		p.AddPage()
	}
	p.SetFont(family, "B", 10)
	p.CellFormat(contentW, rowH+1, "Note", "", 1, "L", false, 0, "")
	p.SetFont(family, "", 9)
	p.MultiCell(contentW, lineH, multiLine(r.d.Memo), "", "L", false)
}
