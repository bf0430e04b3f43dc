package invoices

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Method is how a payment was made.
type Method string

// The methods.
const (
	MethodBankTransfer Method = "bank_transfer"
	MethodCard         Method = "card"
	MethodCash         Method = "cash"
	MethodOther        Method = "other"
)

// PaymentStatus is received until the payment is reversed (a bounced
// transfer, a charged-back card).
type PaymentStatus string

// The payment statuses.
const (
	PaymentReceived PaymentStatus = "received"
	PaymentReversed PaymentStatus = "reversed"
)

// Payment is money received against an issued invoice, in its currency.
// A reversed payment stays on record and no longer counts.
type Payment struct {
	ID             uuid.UUID     `json:"id"`
	InvoiceID      uuid.UUID     `json:"invoice_id"`
	Status         PaymentStatus `json:"status"`
	Amount         int64         `json:"amount"`
	Currency       string        `json:"currency"`
	ReceivedOn     Date          `json:"received_on"`
	Method         Method        `json:"method"`
	Reference      string        `json:"reference"`
	RecordedBy     *uuid.UUID    `json:"recorded_by"`
	RecordedAt     time.Time     `json:"recorded_at"`
	ReversedAt     *time.Time    `json:"reversed_at"`
	ReversedBy     *uuid.UUID    `json:"reversed_by"`
	ReversalReason *string       `json:"reversal_reason"`
	Version        int64         `json:"version"`
	// Invoice is the invoice after a payment was recorded or reversed.
	Invoice *Invoice `json:"invoice,omitempty"`
	// AllowanceID and Allowance are in the result of the call that drew
	// a standing allowance instead of an approval (Invoice.AllowanceID).
	AllowanceID *uuid.UUID                `json:"allowance_id,omitempty"`
	Allowance   *capability.AllowanceDraw `json:"allowance,omitempty"`
}

// ResourceVersion is the version the ETag carries.
func (p *Payment) ResourceVersion() int64 { return p.Version }

// Cursor is the payment's position in its invoice's list.
func (p *Payment) Cursor() page.Cursor { return page.Cursor{CreatedAt: p.RecordedAt, ID: p.ID} }

type paymentInput struct {
	InvoiceID  uuid.UUID `json:"invoice_id"`
	Amount     int64     `json:"amount"`
	Currency   string    `json:"currency"`
	ReceivedOn string    `json:"received_on"`
	Method     Method    `json:"method"`
	Reference  string    `json:"reference"`
}

// futureSlack is how far past today (in the business time zone) a payment
// may say it was received: a day, for a payer a time zone ahead.
const futureSlack = 1

// check refuses what the invoice cannot take: another currency, a date
// received more than a day ahead, more than the balance due.
func (in paymentInput) check(inv *Invoice, today Date) (Date, error) {
	if in.Currency != "" && in.Currency != inv.Currency {
		return Date{}, problem.Invalid("currency", "is %s, but the invoice is in %s: record the amount received in %s", in.Currency, inv.Currency, inv.Currency)
	}
	on, err := ParseDate(in.ReceivedOn)
	if err != nil {
		return Date{}, problem.Invalid("received_on", "must be a date (YYYY-MM-DD)")
	}
	if latest := today.AddDate(0, 0, futureSlack); on.After(latest) {
		return Date{}, problem.Invalid("received_on", "%s is in the future: today is %s in the business time zone, and a payment may be dated at most a day ahead", on, today)
	}
	if in.Amount > inv.BalanceDue {
		return Date{}, overBalance("amount", in.Amount, inv)
	}
	return on, nil
}

// overBalance is the 422 of an amount above what the invoice still owes.
func overBalance(field string, amount int64, inv *Invoice) error {
	e := problem.Invalid(field, "%s is more than the balance due, %s", money.Display(amount, inv.Currency), money.Display(inv.BalanceDue, inv.Currency))
	return e.With("balance_due", inv.BalanceDue)
}

// RecordPayment is the record-payment capability (bound and governed:
// the approval policy's tiers apply to its amount, ADR-0022 §1): a payment
// of part or all of an issued invoice's balance; the invoice is paid once
// nothing is owed.
func (s *Service) RecordPayment(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[paymentInput](call)
	if err != nil {
		return nil, err
	}
	return onLocked(ctx, s, call, in.InvoiceID, ActionRecordPayment, func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*Payment, error) {
		on, err := in.check(inv, s.BusinessToday())
		if err != nil {
			return nil, err
		}
		grant, err := s.authorizeAmount(ctx, tx, call, inv, nil, nil, in.Amount)
		if err != nil {
			return nil, err
		}
		return s.recordTx(ctx, tx, call, inv, grant, &Payment{Amount: in.Amount, ReceivedOn: on, Method: in.Method, Reference: in.Reference})
	})
}

// recordTx records p against the locked invoice inv, let through by
// grant, moves its balance and audits it; p's invoice is the invoice after.
func (s *Service) recordTx(ctx context.Context, tx pgx.Tx, call capability.Call, inv *Invoice, grant capability.Grant, p *Payment) (*Payment, error) {
	now := s.clock()
	p.ID, p.InvoiceID, p.RecordedBy, p.RecordedAt = uuid.Must(uuid.NewV7()), inv.ID, &call.Principal.UserID, now
	p, err := paymentInsertTx(ctx, tx, p)
	if err != nil {
		return nil, err
	}
	out, err := invoiceSettleTx(ctx, tx, inv, p.Amount, 0, now)
	if err != nil {
		return nil, err
	}
	p.Invoice = out.dated(s.BusinessToday())
	if err := s.emitSettled(ctx, tx, events.PaymentRecorded, now, p, inv, out); err != nil {
		return nil, err
	}
	if d := grant.Allowance; d != nil {
		p.AllowanceID, p.Allowance = &d.ID, d
		p.Invoice.drew(grant)
	}
	return p, s.audit(ctx, tx, call, "payment.recorded", "payment", p.ID, grantData(grant, map[string]any{
		"invoice_id": inv.ID, "amount": p.Amount, "currency": p.Currency, "received_on": p.ReceivedOn.String(),
		"method": p.Method, "reference": p.Reference, "balance_due": out.BalanceDue, "invoice_status": out.Status,
	}))
}

// MarkPaid is the mark-invoice-paid capability (bound and governed, as
// record-payment): a payment of the whole balance due, received today (in
// the business time zone).
func (s *Service) MarkPaid(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[targetInput](call)
	if err != nil {
		return nil, err
	}
	return s.mutate(ctx, call, in.InvoiceID, ActionMarkPaid, func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*Invoice, error) {
		grant, err := s.authorizeAmount(ctx, tx, call, inv, nil, nil, inv.BalanceDue)
		if err != nil {
			return nil, err
		}
		if inv.BalanceDue > 0 {
			p, err := s.recordTx(ctx, tx, call, inv, grant, &Payment{Amount: inv.BalanceDue, ReceivedOn: s.BusinessToday(), Method: MethodOther, Reference: "Paid in full"})
			if err != nil {
				return nil, err
			}
			return p.Invoice, nil
		}
		// Nothing to receive (an invoice of zero): paid as it stands.
		now := s.clock()
		out, err := invoiceSettleTx(ctx, tx, inv, 0, 0, now)
		if err != nil {
			return nil, err
		}
		if err := s.emit.EmitTx(ctx, tx, events.New(events.InvoicePaid, now, out)); err != nil {
			return nil, err
		}
		return out.drew(grant), s.audit(ctx, tx, call, "invoice.paid", "invoice", out.ID, grantData(grant, map[string]any{"version": out.Version, "number": out.Number}))
	})
}

type reverseInput struct {
	PaymentID uuid.UUID `json:"payment_id"`
	Reason    string    `json:"reason"`
}

// ReversePayment is the reverse-payment capability (bound and governed:
// no tier by default, admins may set them on its amount): a payment that
// did not arrive after all stops counting, and a paid invoice it settled
// is issued (owing) again. If-Match names the payment's version.
func (s *Service) ReversePayment(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[reverseInput](call)
	if err != nil {
		return nil, err
	}
	return result(store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Payment, error) {
		p, err := paymentGet(ctx, tx, in.PaymentID)
		if err != nil {
			return nil, err
		}
		inv, err := InvoiceLockTx(ctx, tx, p.InvoiceID)
		if err != nil {
			return nil, err
		}
		if p, err = paymentLockTx(ctx, tx, in.PaymentID); err != nil {
			return nil, err
		}
		if err := etag.CheckIfMatch(call.IfMatch, p.Version); err != nil {
			return nil, err
		}
		if p.ReversedAt != nil {
			return nil, problem.Conflict(CodeInvalidTransition, fmt.Sprintf("payment %s was reversed already, at %s", p.ID, p.ReversedAt.Format(time.RFC3339)))
		}
		if _, err := Transition(inv.Status, ActionReversePayment); err != nil {
			return nil, err
		}
		grant, err := s.authorizeAmount(ctx, tx, call, inv, nil, nil, p.Amount)
		if err != nil {
			return nil, err
		}
		return s.reverseTx(ctx, tx, call, inv, grant, p, in.Reason)
	}))
}

func (s *Service) reverseTx(ctx context.Context, tx pgx.Tx, call capability.Call, inv *Invoice, grant capability.Grant, p *Payment, reason string) (*Payment, error) {
	now := s.clock()
	p, err := paymentReverseTx(ctx, tx, p, call.Principal.UserID, reason, now)
	if err != nil {
		return nil, err
	}
	out, err := invoiceSettleTx(ctx, tx, inv, -p.Amount, 0, now)
	if err != nil {
		return nil, err
	}
	p.Invoice = out.dated(s.BusinessToday())
	if err := s.emitSettled(ctx, tx, events.PaymentReversed, now, p, inv, out); err != nil {
		return nil, err
	}
	return p, s.audit(ctx, tx, call, "payment.reversed", "payment", p.ID, grantData(grant, map[string]any{
		"invoice_id": inv.ID, "amount": p.Amount, "currency": p.Currency, "reason": reason,
		"balance_due": out.BalanceDue, "invoice_status": out.Status,
	}))
}

// ofInvoiceInput asks for one page of what an invoice holds (its
// payments, its credit notes).
type ofInvoiceInput struct {
	InvoiceID uuid.UUID `json:"invoice_id"`
	Cursor    string    `json:"cursor"`
	Limit     int       `json:"limit"`
}

func (in ofInvoiceInput) page() (page.Request, error) {
	p := page.Request{Limit: in.Limit}
	if in.Cursor != "" {
		after, err := page.ParseCursor(in.Cursor)
		if err != nil {
			return p, err
		}
		p.After = after
	}
	return p, nil
}

// PaymentListAll is the list-payments capability: an invoice's payments,
// reversed ones included, oldest first.
func (s *Service) PaymentListAll(ctx context.Context, call capability.Call) (any, error) {
	return listOf(ctx, s, call, PaymentList)
}

// listOf lists what invoice in.invoice_id holds with list: a page, or 404
// when the invoice is not there.
func listOf[T page.Row](ctx context.Context, s *Service, call capability.Call,
	list func(context.Context, store.Executor, uuid.UUID, page.Request) ([]T, error)) (any, error) {
	var in ofInvoiceInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	p, err := in.page()
	if err != nil {
		return nil, err
	}
	rows, err := list(ctx, s.db, in.InvoiceID, p.Ahead())
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		if err := invoiceExists(ctx, s.db, in.InvoiceID); err != nil {
			return nil, err
		}
	}
	return page.Of(rows, p.Limit), nil
}

// Payment capability names.
const (
	CapRecordPayment  = "record-payment"
	CapReversePayment = "reverse-payment"
	CapListPayments   = "list-payments"
)

// ofInvoiceSchema is the input of a list of what an invoice holds.
const ofInvoiceSchema = `{"type": "object", "additionalProperties": false, "required": ["invoice_id"], "properties": {
	"invoice_id": ` + uuidSchema + `, "limit": ` + limitSchema + `, "cursor": ` + cursorSchema + `}}`

func paymentCapabilities(svc *Service) []capability.Capability {
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name:        CapRecordPayment,
			Description: "Record money received against an issued invoice: amount in minor units of the invoice's currency (at most its balance_due), the date it was received (YYYY-MM-DD, at most a day ahead), the method and the payer's reference. Partial payments are fine; the invoice becomes paid when its balance_due reaches 0. A large payment needs an approval by a back-office approver under the approval policy: then the answer is APPROVAL_REQUIRED with an approval_id; do not retry until it is approved. Returns the payment with the invoice after it (amount_paid, balance_due, status).",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["invoice_id", "amount", "received_on", "method"], "properties": {
				"invoice_id": ` + uuidSchema + `,
				"amount": {"type": "integer", "minimum": 1, "description": "minor units of the invoice's currency; at most its balance_due"},
				"currency": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "optional check: the invoice's currency (ISO 4217); another is refused"},
				"received_on": {"type": "string", "format": "date", "description": "YYYY-MM-DD the money arrived, at most a day after today in the business time zone"},
				"method": {"type": "string", "enum": ["bank_transfer", "card", "cash", "other"]},
				"reference": {"type": "string", "format": "visible-text", "maxLength": 200, "description": "the payer's reference or transaction id, as on the statement"}}}`),
			Risk:     capability.RiskBound,
			Governed: true,
		}, Handler: svc.RecordPayment},
		{Descriptor: capability.Descriptor{
			Name:        CapReversePayment,
			Description: "Reverse a recorded payment that did not arrive after all (a bounced transfer, a chargeback), with the reason. It stays on record but no longer counts: the invoice owes that amount again and a paid invoice becomes issued. Returns the reversed payment with the invoice after it.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["payment_id", "reason"], "properties": {
				"payment_id": ` + uuidSchema + `,
				"reason": {"type": "string", "format": "visible-text", "minLength": 1, "maxLength": 1000, "description": "why the payment is reversed, e.g. transfer returned by the bank"}}}`),
			Risk:     capability.RiskBound,
			Governed: true,
		}, Handler: svc.ReversePayment},
		{Descriptor: capability.Descriptor{
			Name:        CapListPayments,
			Description: "List the payments of an invoice, oldest first, reversed ones included (status received or reversed). Returns {data: [payment], has_more, next_cursor}.",
			InputSchema: schema(ofInvoiceSchema),
			Risk:        capability.RiskRead,
		}, Handler: svc.PaymentListAll},
	}
}

// emitSettled records the settlement event t (its data the payment or
// credit note), and invoice.paid when it is what settled the invoice:
// before owed something, after owes nothing.
func (s *Service) emitSettled(ctx context.Context, tx pgx.Tx, t events.Type, at time.Time, data any, before, after *Invoice) error {
	if err := s.emit.EmitTx(ctx, tx, events.New(t, at, data)); err != nil {
		return err
	}
	if before.Status != StatusPaid && after.Status == StatusPaid {
		return s.emit.EmitTx(ctx, tx, events.New(events.InvoicePaid, at, after))
	}
	return nil
}
