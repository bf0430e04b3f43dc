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
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/units"
	"github.com/invoiced/invoiced/vat"
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
	ActionSend           Action = "send"
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
	ActionSend:           {[]Status{StatusIssued, StatusPaid}, ""},
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
	ActionSend:           "be mailed to its customer",
}

// Customer is someone invoices are addressed to: what an invoice must
// say of its buyer (Article 226 of Directive 2006/112/EC) and how to
// write to them.
type Customer struct {
	ID       uuid.UUID     `json:"id"`
	Name     string        `json:"name"`
	Email    string        `json:"email"`
	Currency string        `json:"currency"`
	Address  party.Address `json:"address"`
	// VATID is in party.ParseVATID's compact form; empty when unknown.
	VATID     party.VATID `json:"vat_id"`
	TaxNumber string      `json:"tax_number"`
	// BuyerReference is what the buyer asks invoices to quote (a German
	// Leitweg-ID); an invoice's own reference takes precedence.
	BuyerReference string `json:"buyer_reference"`
	// Language is what its documents are written in: en, de or fr.
	Language string `json:"language"`
	// PaymentTermsDays is the days net its invoices give by default; nil
	// takes the seller's.
	PaymentTermsDays *int `json:"payment_terms_days"`
	// EInvoiceFormat is the e-invoice format the customer takes, or
	// einvoice.None; issuing checks a draft against its rules.
	EInvoiceFormat einvoice.Format `json:"einvoice_format"`
	// PeppolID is the customer's Peppol participant id
	// (einvoice.Endpoint's "scheme:identifier"), empty when unknown.
	PeppolID  string    `json:"peppol_id"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Languages are those documents are written in.
var Languages = []string{"en", "de", "fr"}

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

// Line is one line of an invoice. Amount is quantity × unit_amount,
// rounded half-even, in minor units of the invoice's currency; TaxAmount
// is the line's share of its (category, rate) group's VAT (ADR-0021). A
// line of an exempt category states why (ExemptionReason, and a VATEX
// code where one applies).
type Line struct {
	Description     string            `json:"description"`
	Quantity        quantity.Quantity `json:"quantity"`
	Unit            string            `json:"unit"`
	UnitAmount      int64             `json:"unit_amount"`
	VATCategory     vat.Category      `json:"vat_category"`
	TaxRateBPS      int64             `json:"tax_rate_bps"`
	ExemptionReason string            `json:"exemption_reason"`
	ExemptionCode   string            `json:"exemption_code"`
	Amount          int64             `json:"amount"`
	TaxAmount       int64             `json:"tax_amount"`
}

// VATGroup is one entry of an invoice's VAT breakdown (EN 16931 BG-23):
// the lines of one category and rate, their net sum and their VAT.
type VATGroup struct {
	Category        vat.Category `json:"vat_category"`
	RateBPS         int64        `json:"tax_rate_bps"`
	TaxableAmount   int64        `json:"taxable_amount"`
	TaxAmount       int64        `json:"tax_amount"`
	ExemptionReason string       `json:"exemption_reason"`
	ExemptionCode   string       `json:"exemption_code"`
}

// TaxRounding says how an invoice's VAT was computed (ADR-0021).
type TaxRounding string

// The roundings: per (category, rate) group, or per line as invoices were
// before groups.
const (
	RoundPerGroup TaxRounding = "group"
	RoundPerLine  TaxRounding = "line"
)

// Breakdown groups lines by (category, rate), in the order the lines
// first use each: the sums of their nets and of their taxes, and the
// first line's exemption reason and code.
func Breakdown(lines []Line) []VATGroup {
	out := []VATGroup{}
	for _, l := range lines {
		i := slices.IndexFunc(out, func(g VATGroup) bool { return g.Category == l.VATCategory && g.RateBPS == l.TaxRateBPS })
		if i < 0 {
			out = append(out, VATGroup{Category: l.VATCategory, RateBPS: l.TaxRateBPS, ExemptionReason: l.ExemptionReason, ExemptionCode: l.ExemptionCode})
			i = len(out) - 1
		}
		out[i].TaxableAmount += l.Amount
		out[i].TaxAmount += l.TaxAmount
	}
	return out
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
	// SupplyDate is when the goods or services were supplied, where that
	// is not the issue date; ServicePeriod the period invoiced instead.
	SupplyDate    *Date   `json:"supply_date"`
	ServicePeriod *Period `json:"service_period"`
	// PaymentTermsDays is days net; at issue it gives the due date when
	// none was set (the customer's or the seller's when the draft has none).
	PaymentTermsDays *int   `json:"payment_terms_days"`
	PurchaseOrder    string `json:"purchase_order"`
	// BuyerReference is what the buyer asks invoices to quote; a draft's
	// empty one takes the customer's, frozen when it is issued.
	BuyerReference string `json:"buyer_reference"`
	// Readiness is, for a draft read alone (get-invoice), what keeps it
	// from being issued; nil otherwise.
	Readiness *Readiness `json:"readiness,omitempty"`
	// VATBreakdown is computed from the lines (Breakdown).
	VATBreakdown []VATGroup  `json:"vat_breakdown"`
	TaxRounding  TaxRounding `json:"tax_rounding"`
	Subtotal     int64       `json:"subtotal"`
	TaxTotal     int64       `json:"tax_total"`
	Total        int64       `json:"total"`
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
	// AllowanceID and Allowance are in the result of the call that drew
	// a standing allowance instead of an approval: which one, and what
	// is left of it.
	AllowanceID *uuid.UUID                `json:"allowance_id,omitempty"`
	Allowance   *capability.AllowanceDraw `json:"allowance,omitempty"`
}

// drew marks inv as the result of a call that drew grant's allowance, if
// it drew one.
func (inv *Invoice) drew(grant capability.Grant) *Invoice {
	if d := grant.Allowance; d != nil {
		inv.AllowanceID, inv.Allowance = &d.ID, d
	}
	return inv
}

// Period is a service period, both ends included.
type Period struct {
	Start Date `json:"start"`
	End   Date `json:"end"`
}

// BillTo is the customer as they were when the invoice was issued.
// Invoices issued before addresses were kept have a name and an email
// only.
type BillTo struct {
	Name      string        `json:"name"`
	Email     string        `json:"email"`
	Address   party.Address `json:"address"`
	VATID     party.VATID   `json:"vat_id"`
	TaxNumber string        `json:"tax_number"`
	Language  string        `json:"language"`
	// EInvoiceFormat and PeppolID are the customer's as at issue; invoices
	// issued before e-invoices leave them out.
	EInvoiceFormat einvoice.Format `json:"einvoice_format,omitempty"`
	PeppolID       string          `json:"peppol_id,omitempty"`
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

// LineInput is a line as a client sends it. Unit defaults to C62 (one,
// a unit); VATCategory to S (standard rate) when TaxRateBPS is above 0
// and to Z (zero rated) when it is not; an exempt category's
// ExemptionReason and ExemptionCode to vat.DefaultExemption.
type LineInput struct {
	Description     string            `json:"description"`
	Quantity        quantity.Quantity `json:"quantity"`
	Unit            string            `json:"unit"`
	UnitAmount      int64             `json:"unit_amount"`
	VATCategory     vat.Category      `json:"vat_category"`
	TaxRateBPS      int64             `json:"tax_rate_bps"`
	ExemptionReason string            `json:"exemption_reason"`
	ExemptionCode   string            `json:"exemption_code"`
}

// Input is the line as its author would send it again: ComputeLines of
// the inputs of computed lines gives the same lines, with VAT by
// ADR-0021.
func (l Line) Input() LineInput {
	return LineInput{Description: l.Description, Quantity: l.Quantity, Unit: l.Unit, UnitAmount: l.UnitAmount,
		VATCategory: l.VATCategory, TaxRateBPS: l.TaxRateBPS, ExemptionReason: l.ExemptionReason, ExemptionCode: l.ExemptionCode}
}

// DefaultUnit is a line's unit when its author names none: C62, "one".
const DefaultUnit = "C62"

// line checks in (at field) and returns it as a line without amounts.
func (in LineInput) line(field string) (Line, error) {
	l := Line{Description: in.Description, Quantity: in.Quantity, Unit: in.Unit, UnitAmount: in.UnitAmount,
		VATCategory: in.VATCategory, TaxRateBPS: in.TaxRateBPS, ExemptionReason: in.ExemptionReason, ExemptionCode: in.ExemptionCode}
	if l.Quantity <= 0 {
		return Line{}, problem.Invalid(field+".quantity", "must be above 0, not %s", l.Quantity)
	}
	if l.Unit == "" {
		l.Unit = DefaultUnit
	}
	if !units.Valid(l.Unit) {
		return Line{}, problem.Invalid(field+".unit", "%q is not a unit code of UN/ECE Recommendation 20: use one such as HUR (hours), DAY (days), MON (months), C62 (units), KGM (kilograms)", l.Unit)
	}
	if l.VATCategory == "" {
		l.VATCategory = vat.ZeroRated
		if l.TaxRateBPS > 0 {
			l.VATCategory = vat.Standard
		}
	}
	if err := l.VATCategory.CheckRate(l.TaxRateBPS); err != nil {
		return Line{}, problem.Invalid(field+".tax_rate_bps", "%s", err)
	}
	if l.VATCategory.NeedsExemption() && l.ExemptionReason == "" && l.ExemptionCode == "" {
		l.ExemptionReason, l.ExemptionCode = vat.DefaultExemption(l.VATCategory)
	}
	if err := l.VATCategory.CheckExemption(l.ExemptionReason, l.ExemptionCode); err != nil {
		f := field + ".exemption_reason"
		if l.ExemptionCode != "" {
			f = field + ".exemption_code"
		}
		return Line{}, problem.Invalid(f, "%s", err)
	}
	return l, nil
}

// ComputeLines prices lines by EN 16931's rule (ADR-0021): each line's net
// amount, then per (category, rate) group the VAT of the group's net sum,
// allocated back to its lines. It returns them with the invoice totals.
// Every product and sum is checked: an amount beyond the representable
// range is a 422 AMOUNT_OVERFLOW naming the field, never a wrap.
func ComputeLines(in []LineInput) (lines []Line, subtotal, taxTotal, total int64, err error) {
	lines = make([]Line, 0, len(in))
	for i, li := range in {
		field := fmt.Sprintf("lines.%d", i)
		l, err := li.line(field)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		if l.Amount, err = l.Quantity.Times(l.UnitAmount); err != nil || l.Amount > maxAmount {
			return nil, 0, 0, 0, money.Overflow(field + ".unit_amount")
		}
		if subtotal, err = money.Add(subtotal, l.Amount, "subtotal"); err != nil {
			return nil, 0, 0, 0, err
		}
		lines = append(lines, l)
	}
	for _, g := range Breakdown(lines) {
		tax, err := money.Tax(g.TaxableAmount, g.RateBPS, "tax_total")
		if err != nil {
			return nil, 0, 0, 0, err
		}
		allocate(lines, g, tax)
		if taxTotal, err = money.Add(taxTotal, tax, "tax_total"); err != nil {
			return nil, 0, 0, 0, err
		}
	}
	if total, err = money.Add(subtotal, taxTotal, "total"); err != nil {
		return nil, 0, 0, 0, err
	}
	if total > maxAmount {
		return nil, 0, 0, 0, money.Overflow("total")
	}
	return lines, subtotal, taxTotal, total, nil
}

// allocate gives the lines of group g their shares of its tax: the line
// whose group's nets sum to Nᵢ up to and including it gets
// round(tax × Nᵢ / N) less the same up to the line before, half-even, so
// the shares add up to tax exactly (ADR-0021).
func allocate(lines []Line, g VATGroup, tax int64) {
	var cum, prev int64
	for i := range lines {
		l := &lines[i]
		if l.VATCategory != g.Category || l.TaxRateBPS != g.RateBPS {
			continue
		}
		cum += l.Amount
		upTo := int64(0)
		if g.TaxableAmount > 0 {
			upTo = mulDivHalfEven(tax, cum, g.TaxableAmount)
		}
		l.TaxAmount, prev = upTo-prev, upTo
	}
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
