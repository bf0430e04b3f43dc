package invoices

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/problem"
)

// CreditLineInput credits quantity units of the invoice line at position
// (its index in the invoice's lines, from 0).
type CreditLineInput struct {
	Position int   `json:"position"`
	Quantity int64 `json:"quantity"`
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
type credited struct{ quantity, tax int64 }

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

// creditLines prices a credit by line and quantity. A line's amount is
// quantity × its unit amount; its tax is the line's tax for the quantity
// credited so far less that for the quantity credited before, each rounded
// half-even, so crediting a line in parts takes exactly its tax in all.
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
		l, before := inv.Lines[c.Position], done[c.Position].quantity
		if left := l.Quantity - before; c.Quantity > left {
			return nil, problem.Invalid(field+".quantity", "is %d, but only %d of the %d of line %d (%q) are left to credit", c.Quantity, left, l.Quantity, c.Position, l.Description)
		}
		tax := mulDivHalfEven(l.TaxAmount, before+c.Quantity, l.Quantity) - mulDivHalfEven(l.TaxAmount, before, l.Quantity)
		pos := c.Position
		out = append(out, CreditLine{InvoiceLine: &pos, Line: Line{
			Description: l.Description, Quantity: c.Quantity, UnitAmount: l.UnitAmount, TaxRateBPS: l.TaxRateBPS,
			Amount: c.Quantity * l.UnitAmount, TaxAmount: tax,
		}})
	}
	return out, nil
}

// creditAmount splits amount (tax included) over the invoice's tax rates
// in proportion to what each rate's lines total with tax: rate i gets
// round(amount × (total of rates ≤ i) / invoice total) less the same for
// the rates below it, half-even, so the parts add up to amount exactly.
// Each part's net is part × 10000 / (10000 + rate), half-even; its tax the
// rest. One line per rate with a part, lowest rate first.
func creditAmount(inv *Invoice, amount int64) []CreditLine {
	type group struct{ rate, gross int64 }
	var groups []group
	for _, l := range inv.Lines {
		i, found := slices.BinarySearchFunc(groups, l.TaxRateBPS, func(g group, rate int64) int { return cmp.Compare(g.rate, rate) })
		if !found {
			groups = slices.Insert(groups, i, group{rate: l.TaxRateBPS})
		}
		groups[i].gross += l.Amount + l.TaxAmount
	}
	var out []CreditLine
	var cum, prev int64
	for _, g := range groups {
		cum += g.gross
		upTo := mulDivHalfEven(amount, cum, inv.Total)
		part := upTo - prev
		prev = upTo
		if part == 0 {
			continue
		}
		net := mulDivHalfEven(part, 10000, 10000+g.rate)
		out = append(out, CreditLine{Line: Line{
			Description: fmt.Sprintf("Credit on invoice %s, items taxed at %s", deref(inv.Number), document.Percent(g.rate)),
			Quantity:    1, UnitAmount: net, TaxRateBPS: g.rate, Amount: net, TaxAmount: part - net,
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
