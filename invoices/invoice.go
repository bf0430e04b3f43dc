// Package invoices holds customers and invoices: the domain rules (money,
// the status machine, totals), their Postgres queries, the capabilities
// that every path runs (REST, /v1/capabilities/{name}/invoke, a model's
// tool call) and the thin REST routes over them.
package invoices

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
)

// Status is an invoice's lifecycle state: draft → issued → paid | void.
type Status string

// The statuses.
const (
	StatusDraft  Status = "draft"
	StatusIssued Status = "issued"
	StatusPaid   Status = "paid"
	StatusVoid   Status = "void"
)

// Action is something done to an invoice that the status machine allows
// only from some statuses.
type Action string

// The actions.
const (
	ActionUpdate         Action = "update"
	ActionIssue          Action = "issue"
	ActionVoid           Action = "void"
	ActionMarkPaid       Action = "mark-paid"
	ActionDelete         Action = "delete"
	ActionRecordPayment  Action = "record-payment"
	ActionReversePayment Action = "reverse-payment"
	ActionCredit         Action = "credit"
)

// CodeInvalidTransition is the 409 problem code of an action the invoice's
// current status does not allow.
const CodeInvalidTransition = "INVALID_TRANSITION"

// CodeVersionMismatch is the 412 problem code of an If-Match that does not
// name the current version.
const CodeVersionMismatch = etag.CodeVersionMismatch

// transitions lists, per action, the statuses it may start from and the
// status it leads to. An empty target: the row goes away (delete) or
// stays, or, for what moves money, the status follows from the balance
// (paid when nothing is owed, issued otherwise).
var transitions = map[Action]struct {
	from []Status
	to   Status
}{
	ActionUpdate:         {[]Status{StatusDraft}, StatusDraft},
	ActionIssue:          {[]Status{StatusDraft}, StatusIssued},
	ActionVoid:           {[]Status{StatusIssued}, StatusVoid},
	ActionMarkPaid:       {[]Status{StatusIssued}, StatusPaid},
	ActionDelete:         {[]Status{StatusDraft}, ""},
	ActionRecordPayment:  {[]Status{StatusIssued}, ""},
	ActionReversePayment: {[]Status{StatusIssued, StatusPaid}, ""},
	ActionCredit:         {[]Status{StatusIssued}, ""},
}

// Transition returns the status action leads to from current, or a 409
// INVALID_TRANSITION naming the current status.
func Transition(current Status, action Action) (Status, error) {
	t, ok := transitions[action]
	if !ok {
		return "", fmt.Errorf("invoices: unknown action %q", action)
	}
	if !slices.Contains(t.from, current) {
		from := make([]string, len(t.from))
		for i, st := range t.from {
			from[i] = string(st)
		}
		article, what := "a", strings.Join(from, " or ")
		if strings.ContainsAny(what[:1], "aeiou") {
			article = "an"
		}
		phrase, ok := actionPhrases[action]
		if !ok {
			phrase = string(action)
		}
		e := problem.Conflict(CodeInvalidTransition,
			fmt.Sprintf("the invoice is %s; only %s %s invoice can %s", current, article, what, phrase))
		return "", e.With("current_status", string(current))
	}
	return t.to, nil
}

// actionPhrases say what an action does where its name does not read as
// a verb.
var actionPhrases = map[Action]string{
	ActionRecordPayment:  "take a payment",
	ActionReversePayment: "have a payment reversed",
	ActionCredit:         "be credited",
}

// Customer is someone invoices are addressed to.
type Customer struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	Currency  string    `json:"currency"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ResourceVersion is the version the ETag carries.
func (c *Customer) ResourceVersion() int64 { return c.Version }

// Cursor is the customer's position in the list.
func (c *Customer) Cursor() page.Cursor { return page.Cursor{CreatedAt: c.CreatedAt, ID: c.ID} }

// Date is a calendar date (YYYY-MM-DD) without a time zone.
type Date struct{ time.Time }

// ParseDate parses YYYY-MM-DD.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, err
	}
	return Date{t}, nil
}

// String renders YYYY-MM-DD.
func (d Date) String() string { return d.Format(time.DateOnly) }

// MarshalJSON renders "YYYY-MM-DD".
func (d Date) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// UnmarshalJSON reads "YYYY-MM-DD", so stored snapshots decode back into
// an Invoice.
func (d *Date) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("date: %w", err)
	}
	parsed, err := ParseDate(s)
	if err != nil {
		return fmt.Errorf("date: %w", err)
	}
	*d = parsed
	return nil
}

// Line is one line of an invoice. Amount is quantity × unit_amount and
// TaxAmount is Amount × tax_rate_bps / 10000 rounded half-even, both in
// minor units of the invoice's currency.
type Line struct {
	Description string `json:"description"`
	Quantity    int64  `json:"quantity"`
	UnitAmount  int64  `json:"unit_amount"`
	TaxRateBPS  int64  `json:"tax_rate_bps"`
	Amount      int64  `json:"amount"`
	TaxAmount   int64  `json:"tax_amount"`
}

// Invoice is a draft or issued invoice with its lines and totals.
type Invoice struct {
	ID         uuid.UUID `json:"id"`
	Number     *string   `json:"number"`
	Status     Status    `json:"status"`
	CustomerID uuid.UUID `json:"customer_id"`
	Currency   string    `json:"currency"`
	DueDate    *Date     `json:"due_date"`
	Memo       string    `json:"memo"`
	Lines      []Line    `json:"lines"`
	Subtotal   int64     `json:"subtotal"`
	TaxTotal   int64     `json:"tax_total"`
	Total      int64     `json:"total"`
	// AmountPaid is the sum of the payments that stand, AmountCredited
	// that of the credit notes; BalanceDue is what is still owed (the
	// total less both; nothing for a void invoice). Overdue: issued, owing,
	// and past its due date in the business time zone.
	AmountPaid     int64      `json:"amount_paid"`
	AmountCredited int64      `json:"amount_credited"`
	BalanceDue     int64      `json:"balance_due"`
	Overdue        bool       `json:"overdue"`
	IssuedAt       *time.Time `json:"issued_at"`
	VoidedAt       *time.Time `json:"voided_at"`
	PaidAt         *time.Time `json:"paid_at"`
	Version        int64      `json:"version"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	// BillTo is whom an issued invoice bills, frozen at issue; null for
	// drafts, which bill their customer as it is now.
	BillTo *BillTo `json:"bill_to"`
	// Seller is who issued the invoice, as the seller settings said in
	// its issuing transaction; null for drafts, and for an invoice issued
	// before sellers were recorded (migration 00040) or while none was
	// configured, whose document shows the settings as they are now.
	Seller *Seller `json:"seller"`
}

// BillTo is the customer's name and email as they were when the invoice
// was issued.
type BillTo struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// ResourceVersion is the version the ETag carries.
func (inv *Invoice) ResourceVersion() int64 { return inv.Version }

// Cursor is the invoice's position in the list.
func (inv *Invoice) Cursor() page.Cursor { return page.Cursor{CreatedAt: inv.CreatedAt, ID: inv.ID} }

// Snapshot is what an approver decides on: the invoice with its lines and
// totals, and its customer as they were.
type Snapshot struct {
	*Invoice
	Customer *Customer `json:"customer"`
}

// maxAmount is 2^53-1: amounts leave the service as JSON numbers that
// JavaScript clients read as doubles and that the audit chain and
// approvals hash in RFC 8785 form, so anything above it would be silently
// rounded somewhere. It is reported like an int64 overflow.
const maxAmount = 1<<53 - 1

// LineInput is a line as a client sends it.
type LineInput struct {
	Description string `json:"description"`
	Quantity    int64  `json:"quantity"`
	UnitAmount  int64  `json:"unit_amount"`
	TaxRateBPS  int64  `json:"tax_rate_bps"`
}

// ComputeLines prices lines and returns them with the invoice totals. Every
// product and sum is checked: an amount beyond the representable range is a
// 422 AMOUNT_OVERFLOW naming the field, never a wrap.
func ComputeLines(in []LineInput) (lines []Line, subtotal, taxTotal, total int64, err error) {
	lines = make([]Line, 0, len(in))
	for i, l := range in {
		field := fmt.Sprintf("lines.%d", i)
		amount, err := money.Mul(l.Quantity, l.UnitAmount, field+".unit_amount")
		if err != nil {
			return nil, 0, 0, 0, err
		}
		tax, err := money.Tax(amount, l.TaxRateBPS, field+".tax_rate_bps")
		if err != nil {
			return nil, 0, 0, 0, err
		}
		if subtotal, err = money.Add(subtotal, amount, "subtotal"); err != nil {
			return nil, 0, 0, 0, err
		}
		if taxTotal, err = money.Add(taxTotal, tax, "tax_total"); err != nil {
			return nil, 0, 0, 0, err
		}
		if amount > maxAmount {
			return nil, 0, 0, 0, money.Overflow(field + ".unit_amount")
		}
		lines = append(lines, Line{Description: l.Description, Quantity: l.Quantity, UnitAmount: l.UnitAmount, TaxRateBPS: l.TaxRateBPS, Amount: amount, TaxAmount: tax})
	}
	if total, err = money.Add(subtotal, taxTotal, "total"); err != nil {
		return nil, 0, 0, 0, err
	}
	if total > maxAmount {
		return nil, 0, 0, 0, money.Overflow("total")
	}
	return lines, subtotal, taxTotal, total, nil
}

// settle fills what follows from the settlement columns: the balance due
// (nothing once void).
func (inv *Invoice) settle() {
	inv.BalanceDue = 0
	if inv.Status != StatusVoid {
		inv.BalanceDue = inv.Total - inv.AmountPaid - inv.AmountCredited
	}
}

// dated sets Overdue as of today, a calendar date in the business time
// zone: issued, still owing, and due before today (due today is not
// overdue; without a due date nothing is late).
func (inv *Invoice) dated(today Date) *Invoice {
	inv.Overdue = inv.Status == StatusIssued && inv.BalanceDue > 0 && inv.DueDate != nil && inv.DueDate.Before(today.Time)
	return inv
}
