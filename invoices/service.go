package invoices

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// DefaultNumberPrefix is the series prefix when Config.NumberPrefix is empty.
const DefaultNumberPrefix = "INV"

// DefaultCreditNotePrefix is the credit notes' series prefix when
// Config.CreditNotePrefix is empty.
const DefaultCreditNotePrefix = "CN"

// Config tunes the service.
type Config struct {
	// NumberPrefix starts every invoice number (default INV).
	NumberPrefix string
	// CreditNotePrefix starts every credit note number (default CN).
	CreditNotePrefix string
	// BusinessTimeZone is where the business's days begin and end: an
	// invoice is overdue the day after its due date there, and aging
	// counts its days (default UTC).
	BusinessTimeZone *time.Location
	// Now is the clock (default time.Now); tests pin it.
	Now func() time.Time
}

// Service runs the invoicing capabilities over a database.
type Service struct {
	db       store.Executor
	gate     capability.Gate
	emit     events.Emitter
	prefix   string
	cnPrefix string
	loc      *time.Location
	now      func() time.Time
}

// NewService returns the service. gate authorizes the consequential
// capabilities and the governed payments inside their transactions
// (ADR-0010): the approvals gate in the service, never one that allows
// everything. emit records the invoice, payment and credit-note events in the
// transactions that make them.
func NewService(db store.Executor, gate capability.Gate, emit events.Emitter, cfg Config) *Service {
	s := &Service{db: db, gate: gate, emit: emit, prefix: cfg.NumberPrefix, cnPrefix: cfg.CreditNotePrefix, loc: cfg.BusinessTimeZone, now: cfg.Now}
	if s.prefix == "" {
		s.prefix = DefaultNumberPrefix
	}
	if s.cnPrefix == "" {
		s.cnPrefix = DefaultCreditNotePrefix
	}
	if s.loc == nil {
		s.loc = time.UTC
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// today is the calendar date of the service clock in UTC: the date an
// invoice issued now would carry.
func (s *Service) today() Date {
	n := s.clock()
	return Date{time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC)}
}

// BusinessToday is the calendar date of the service clock in the business
// time zone: the day overdue and aging count from. Civil dates, not
// 24-hour spans, so a day across a DST change is still one day.
func (s *Service) BusinessToday() Date {
	y, m, d := s.now().In(s.loc).Date()
	return Date{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

// RequireWriter refuses principals whose role may not change invoices or
// customers (DESIGN.md §7: approvers read and decide, clerks and admins
// write).
func RequireWriter(p identity.Principal) error {
	if p.Role == identity.RoleClerk || p.Role == identity.RoleAdmin {
		return nil
	}
	return problem.Forbidden(fmt.Sprintf("the %s role may read invoices and customers but not change them", p.Role))
}

// decode reads a call's effective input into v. Ids are uuid.UUID fields:
// the schema checked their format, so decoding is their one parse.
func decode(call capability.Call, v any) error {
	if err := json.Unmarshal(call.Input, v); err != nil {
		// The registry validated the input against the schema, so this
		// is a schema/struct mismatch: a bug, not a client error.
		return fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return nil
}

// writable starts a mutation: the caller's role first, then its input.
func writable[T any](call capability.Call) (T, error) {
	var in T
	if err := RequireWriter(call.Principal); err != nil {
		return in, err
	}
	if err := decode(call, &in); err != nil {
		return in, err
	}
	return in, nil
}

func (s *Service) audit(ctx context.Context, tx pgx.Tx, call capability.Call, typ, subjectType string, id uuid.UUID, data any) error {
	_, err := audit.AppendTx(ctx, tx, audit.Event{
		Type:        typ,
		ActorID:     call.Principal.UserID.String(),
		Actor:       call.Principal.Username,
		Via:         string(call.Via),
		SubjectType: subjectType,
		SubjectID:   id.String(),
		Data:        data,
	})
	return err
}

// result is a capability's answer: no output with an error, so a typed
// nil pointer never passes for one.
func result[T any](out T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}
