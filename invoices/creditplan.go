package invoices

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
)

// CreditLineInput credits quantity units of the invoice line at position
// (its index in the invoice's lines, from 0).
type CreditLineInput struct {
	Position int               `json:"position"`
	Quantity quantity.Quantity `json:"quantity"`
}

// creditInput is the issue-credit-note capability's input: what to credit
// is either lines (by line and quantity) or amount (minor units, tax
// included, split over the invoice's tax rates). The approval binds to
// all of it through the input hash.
type creditInput struct {
	InvoiceID uuid.UUID         `json:"invoice_id"`
	Reason    string            `json:"reason"`
	Lines     []CreditLineInput `json:"lines"`
	Amount    *int64            `json:"amount"`
	Currency  string            `json:"currency"`
}

// CreditLine is a line of a credit note: a Line, and the invoice line it
// credits by quantity (nil for the lines of a credit by amount).
type CreditLine struct {
	InvoiceLine *int `json:"invoice_line"`
	Line
}

// CreditPreview is the credit note a request would issue, as the approver
// decides on it: its series (the number comes on issue), reason, lines and
// totals, and what the invoice would still owe after it.
type CreditPreview struct {
	Series          string       `json:"series"`
	Reason          string       `json:"reason"`
	Lines           []CreditLine `json:"lines"`
	Subtotal        int64        `json:"subtotal"`
	TaxTotal        int64        `json:"tax_total"`
	Total           int64        `json:"total"`
	BalanceDueAfter int64        `json:"balance_due_after"`
}

// CreditSnapshot is what an approver of a credit note decides on: the
// invoice as it is (with its customer) and the credit note.
type CreditSnapshot struct {
	Snapshot
	CreditNote *CreditPreview `json:"credit_note"`
}

// credited is what earlier credit notes took of one invoice line.
type credited struct {
	quantity quantity.Quantity
	tax      int64
}

// mulDivHalfEven is a×b/c rounded half to even, exactly, for a, b ≥ 0 and
// c > 0 (the product of two amounts can exceed int64).
func mulDivHalfEven(a, b, c int64) int64 {
	q, r := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(a), big.NewInt(b)), big.NewInt(c), new(big.Int))
	switch r.Lsh(r, 1).Cmp(big.NewInt(c)) {
	case 1:
		q.Add(q, big.NewInt(1))
	case 0:
		if q.Bit(0) == 1 {
			q.Add(q, big.NewInt(1))
		}
	}
	return q.Int64()
}

// creditLines prices a credit by line and quantity. A line's amount and
// tax are the line's for the quantity credited so far less those for the
// quantity credited before, each in proportion to the line's quantity and
// rounded half-even, so crediting a line in parts takes exactly its amount
// and its tax in all.
func creditLines(inv *Invoice, done map[int]credited, in []CreditLineInput) ([]CreditLine, error) {
	out := make([]CreditLine, 0, len(in))
	seen := map[int]bool{}
	for i, c := range in {
		field := fmt.Sprintf("lines.%d", i)
		if c.Position >= len(inv.Lines) {
			return nil, problem.Invalid(field+".position", "the invoice has %d line(s), at positions 0 to %d", len(inv.Lines), len(inv.Lines)-1)
		}
		if seen[c.Position] {
			return nil, problem.Invalid(field+".position", "credits line %d a second time; give each line once with the whole quantity", c.Position)
		}
		seen[c.Position] = true
		if c.Quantity <= 0 {
			return nil, problem.Invalid(field+".quantity", "must be above 0, not %s", c.Quantity)
		}
		l, before := inv.Lines[c.Position], done[c.Position].quantity
		if left := l.Quantity - before; c.Quantity > left {
			return nil, problem.Invalid(field+".quantity", "is %s, but only %s of the %s of line %d (%q) are left to credit", c.Quantity, left, l.Quantity, c.Position, l.Description)
		}
		share := func(of int64) int64 {
			return mulDivHalfEven(of, int64(before+c.Quantity), int64(l.Quantity)) - mulDivHalfEven(of, int64(before), int64(l.Quantity))
		}
		pos := c.Position
		cl := l
		cl.Quantity, cl.Amount, cl.TaxAmount = c.Quantity, share(l.Amount), share(l.TaxAmount)
		out = append(out, CreditLine{InvoiceLine: &pos, Line: cl})
	}
	return out, nil
}

// creditAmount splits amount (tax included) over the invoice's VAT
// groups (category and rate) in proportion to what each group's lines
// total with tax: group i gets round(amount × (total of groups ≤ i) /
// invoice total) less the same for the groups before it, half-even, so
// the parts add up to amount exactly. Each part's net is part × 10000 /
// (10000 + rate), half-even; its tax the rest. One line per group with a
// part, lowest rate first.
func creditAmount(inv *Invoice, amount int64) []CreditLine {
	groups := Breakdown(inv.Lines)
	slices.SortStableFunc(groups, func(a, b VATGroup) int {
		return cmp.Or(cmp.Compare(a.RateBPS, b.RateBPS), cmp.Compare(a.Category, b.Category))
	})
	var out []CreditLine
	var cum, prev int64
	for _, g := range groups {
		cum += g.TaxableAmount + g.TaxAmount
		upTo := mulDivHalfEven(amount, cum, inv.Total)
		part := upTo - prev
		prev = upTo
		if part == 0 {
			continue
		}
		net := mulDivHalfEven(part, 10000, 10000+g.RateBPS)
		what := "items taxed at " + document.Percent(g.RateBPS)
		if g.Category != vat.Standard {
			what = "items: " + g.Category.Name("en")
		}
		out = append(out, CreditLine{Line: Line{
			Description: fmt.Sprintf("Credit on invoice %s, %s", deref(inv.Number), what),
			Quantity:    quantity.One, Unit: DefaultUnit, UnitAmount: net, VATCategory: g.Category, TaxRateBPS: g.RateBPS,
			ExemptionReason: g.ExemptionReason, ExemptionCode: g.ExemptionCode, Amount: net, TaxAmount: part - net,
		}})
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// planCredit checks a credit against the locked invoice inv (done: what
// earlier credit notes took of each line) and prices it. Refusals are
// 422s naming the field; a credit above the balance due is refused, so an
// invoice is never credited beyond what it still asks to be paid.
func planCredit(inv *Invoice, done map[int]credited, in creditInput, series string) (*CreditPreview, error) {
	if in.Currency != "" && in.Currency != inv.Currency {
		return nil, problem.Invalid("currency", "is %s, but the invoice is in %s: a credit note is in its invoice's currency", in.Currency, inv.Currency)
	}
	var (
		lines []CreditLine
		field = "lines"
		err   error
	)
	switch {
	case (in.Lines == nil) == (in.Amount == nil):
		return nil, problem.Invalid("amount", "give either lines (what to credit by invoice line and quantity) or amount (how much, tax included), not both or neither")
	case in.Amount != nil:
		if *in.Amount > inv.BalanceDue {
			return nil, overBalance("amount", *in.Amount, inv)
		}
		field, lines = "amount", creditAmount(inv, *in.Amount)
	default:
		if lines, err = creditLines(inv, done, in.Lines); err != nil {
			return nil, err
		}
	}
	cp := &CreditPreview{Series: series, Reason: in.Reason, Lines: lines}
	for _, l := range lines {
		cp.Subtotal += l.Amount
		cp.TaxTotal += l.TaxAmount
	}
	cp.Total = cp.Subtotal + cp.TaxTotal
	if cp.Total == 0 {
		return nil, problem.Invalid(field, "credits nothing: the lines named are free of charge")
	}
	if cp.Total > inv.BalanceDue {
		return nil, overBalance(field, cp.Total, inv)
	}
	cp.BalanceDueAfter = inv.BalanceDue - cp.Total
	return cp, nil
}
