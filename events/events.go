// Package events names the facts other people and systems learn of
// (approval needed, invoice issued, …) and the one interface through which
// domain packages record them: inside the transaction that makes the fact,
// so a rolled-back fact is never announced and a committed one never lost.
// Delivery (webhooks, email) is the outbox's business; domain packages
// know nothing of it.
package events

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/jackc/pgx/v5"
)

// Type is an event's name, as webhook subscriptions and envelopes carry it.
type Type string

var types []Type

// register adds a type to the list Types returns: adding an event type is
// one line below.
func register(name string) Type {
	t := Type(name)
	types = append(types, t)
	return t
}

// The event types.
var (
	ApprovalRequested = register("approval.requested")
	ApprovalDecided   = register("approval.decided")
	ApprovalExpired   = register("approval.expired")
	ApprovalEscalated = register("approval.escalated")
	InvoiceIssued     = register("invoice.issued")
	InvoiceVoided     = register("invoice.voided")
	InvoicePaid       = register("invoice.paid")
	InvoiceDeleted    = register("invoice.deleted")
	InvoiceSent       = register("invoice.sent")
	// InvoiceReminderSent: the mail server took a reminder of an overdue
	// invoice (docs/reminders.md).
	InvoiceReminderSent = register("invoice.reminder_sent")
	CreditNoteIssued    = register("credit_note.issued")
	CreditNoteSent      = register("credit_note.sent")
	PaymentRecorded     = register("payment.recorded")
	PaymentReversed     = register("payment.reversed")
	// ScheduleRun: a period of a recurring invoice schedule was drafted,
	// failed, issued, or waits for an approval (docs/schedules.md).
	ScheduleRun = register("schedule.run")
)

// Types returns every event type, in the order above.
func Types() []Type { return slices.Clone(types) }

// ParseType validates an event type name.
func ParseType(field, s string) (Type, error) {
	if slices.Contains(types, Type(s)) {
		return Type(s), nil
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	return "", problem.Invalid(field, "%q is not an event type; the types are %s", s, strings.Join(names, ", "))
}

// Event is one fact. Data is what a subscriber learns of it: the resource
// as the API shows it, marshalled to JSON when emitted.
type Event struct {
	ID        uuid.UUID
	Type      Type
	CreatedAt time.Time
	Data      any
}

// New returns an event of type t at time at with a fresh time-ordered id.
func New(t Type, at time.Time, data any) Event {
	return Event{ID: uuid.Must(uuid.NewV7()), Type: t, CreatedAt: at.UTC(), Data: data}
}

// Emitter records events in the caller's transaction.
type Emitter interface {
	EmitTx(ctx context.Context, tx pgx.Tx, ev Event) error
}
