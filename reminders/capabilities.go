package reminders

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/sending"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Capability names.
const (
	CapUpcoming = "list-upcoming-reminders"
	CapSend     = "send-reminder"
	CapDispute  = "set-invoice-dispute"
	CapHold     = "set-customer-hold"
)

const (
	uuidSchema   = `{"type": "string", "format": "uuid"}`
	reasonSchema = `{"type": "string", "maxLength": 500, "description": "why, for the record"}`
	flagSchema   = `{"type": "object", "required": ["set", "reason", "since", "set_by"], "properties": {"set": {"type": "boolean"}, "reason": {"type": "string"}, "since": {"type": ["string", "null"]}, "set_by": {"type": ["string", "null"]}}}`
	upcomingItem = `{"type": "object", "required": ["invoice_id", "number", "customer_id", "customer_name", "to", "language", "level", "days_past_due", "on", "balance_due", "currency", "automatic"], "properties": {
		"invoice_id": ` + uuidSchema + `, "number": {"type": "string"}, "customer_id": ` + uuidSchema + `, "customer_name": {"type": "string"},
		"to": {"type": "string"}, "language": {"type": "string"}, "level": {"type": "integer"}, "days_past_due": {"type": "integer"},
		"on": {"type": "string", "format": "date"}, "balance_due": {"type": "integer"}, "currency": {"type": "string"}, "automatic": {"type": "boolean"}}}`
	upcomingSchema = `{"type": "object", "required": ["as_of", "automatic", "data", "has_more", "next_cursor"], "properties": {
		"as_of": {"type": "string", "format": "date"}, "automatic": {"type": "boolean"},
		"data": {"type": "array", "items": ` + upcomingItem + `}, "has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}}}`
)

// Capabilities returns the reminder capabilities over svc, for app/ to
// register: reading what is ahead, sending one by hand (bound, as
// send-invoice), and the dispute and hold that stop them (bound).
func Capabilities(svc *Service) []capability.Capability {
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name:  CapUpcoming,
			Title: "List the reminders ahead",
			Description: "List the reminders ahead, soonest first: for each overdue or soon overdue invoice that owes, the level its next reminder is at, the day it falls due (on), " +
				"to whom it goes, and whether the automatic reminders will send it (automatic). Disputed invoices, customers on hold and customers without an email get none and are not listed. " +
				"Returns {as_of, automatic (whether automatic reminders are on), data, has_more, next_cursor}.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, "cursor": {"type": "string", "maxLength": 512}}}`),
			OutputSchema: json.RawMessage(upcomingSchema),
			Risk:         capability.RiskRead,
		}, Handler: svc.Upcoming},
		{Descriptor: capability.Descriptor{
			Name:  CapSend,
			Title: "Remind a customer of an overdue invoice",
			Description: "Mail the customer a reminder of an overdue invoice, with its PDF (and the e-invoice their format asks for), in their language, worded as the reminder level says. " +
				"level defaults to the level the invoice is due for (see list-upcoming-reminders). Each level is sent once per invoice: REMINDER_ALREADY_SENT otherwise. " +
				"Refused for an invoice not overdue (INVOICE_NOT_OVERDUE), disputed (INVOICE_DISPUTED) or of a customer on hold (CUSTOMER_ON_HOLD). Returns the sending, queued.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["invoice_id"], "properties": {"invoice_id": ` + uuidSchema + `, "level": {"type": "integer", "minimum": 1, "maximum": 10}}}`),
			OutputSchema: json.RawMessage(sending.SendingSchema),
			Risk:         capability.RiskBound,
			Additive:     true,
			OpenWorld:    true,
		}, Handler: svc.SendReminder},
		{Descriptor: capability.Descriptor{
			Name:         CapDispute,
			Title:        "Mark an invoice disputed, or the dispute resolved",
			Idempotent:   true,
			Description:  "Record that the customer disputes an invoice (disputed true, with the reason), or that the dispute is resolved (false). A disputed invoice gets no reminder. Returns the dispute: {set, reason, since, set_by}.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["invoice_id", "disputed"], "properties": {"invoice_id": ` + uuidSchema + `, "disputed": {"type": "boolean"}, "reason": ` + reasonSchema + `}}`),
			OutputSchema: json.RawMessage(flagSchema),
			Risk:         capability.RiskBound,
		}, Handler: svc.SetDispute},
		{Descriptor: capability.Descriptor{
			Name:         CapHold,
			Title:        "Put a customer on hold, or release the hold",
			Idempotent:   true,
			Description:  "Put a customer on hold (on_hold true, with the reason): none of their invoices gets a reminder until the hold is released (false). Returns the hold: {set, reason, since, set_by}.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["customer_id", "on_hold"], "properties": {"customer_id": ` + uuidSchema + `, "on_hold": {"type": "boolean"}, "reason": ` + reasonSchema + `}}`),
			OutputSchema: json.RawMessage(flagSchema),
			Risk:         capability.RiskBound,
		}, Handler: svc.SetHold},
	}
}

// UpcomingReminder is the next reminder of one invoice.
type UpcomingReminder struct {
	InvoiceID    uuid.UUID `json:"invoice_id"`
	Number       string    `json:"number"`
	CustomerID   uuid.UUID `json:"customer_id"`
	CustomerName string    `json:"customer_name"`
	To           string    `json:"to"`
	Language     string    `json:"language"`
	Level        int       `json:"level"`
	DaysPastDue  int       `json:"days_past_due"`
	// On is the day the level falls due; a day past, when the automatic
	// reminders are off or stop before it, or one is sent by hand.
	On         invoices.Date `json:"on"`
	BalanceDue int64         `json:"balance_due"`
	Currency   string        `json:"currency"`
	// Automatic: the automatic reminders will send it, on On or at their
	// next run (hourly) once On has come.
	Automatic bool `json:"automatic"`
}

// Cursor is its place in the list: by day, then invoice.
func (u *UpcomingReminder) Cursor() page.Cursor {
	return page.Cursor{CreatedAt: u.On.Time, ID: u.InvoiceID}
}

// Upcoming is the reminders ahead as of a day.
type Upcoming struct {
	AsOf      invoices.Date `json:"as_of"`
	Automatic bool          `json:"automatic"`
	page.List[*UpcomingReminder]
}

type listInput struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// Upcoming is the list-upcoming-reminders capability (read).
func (s *Service) Upcoming(ctx context.Context, call capability.Call) (any, error) {
	var in listInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	p := page.Request{Limit: in.Limit}
	if in.Cursor != "" {
		after, err := page.ParseCursor(in.Cursor)
		if err != nil {
			return nil, err
		}
		p.After = after
	}
	today := s.today()
	var (
		st   *Settings
		list []open
	)
	err := store.ReadSnapshot(ctx, s.db, func(db store.Executor) error {
		var err error
		if st, err = SettingsGet(ctx, db); err != nil {
			return err
		}
		list, err = openList(ctx, db, today, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	var rows []*UpcomingReminder
	for _, o := range list {
		d := next(st, o)
		if o.Disputed || o.Held || o.Email == "" || d == nil {
			continue
		}
		on := d.on
		if d.reached {
			on = today.Time
		}
		u := &UpcomingReminder{InvoiceID: o.InvoiceID, Number: o.Number, CustomerID: o.CustomerID, CustomerName: o.CustomerName,
			To: o.Email, Language: o.Language, Level: d.level.Level, DaysPastDue: d.level.DaysPastDue, On: invoices.Date{Time: on},
			BalanceDue: o.Balance, Currency: o.Currency, Automatic: st.Automatic && automatic(st, d.level)}
		if p.After != nil && cmp.Or(u.On.Compare(p.After.CreatedAt), compareIDs(u.InvoiceID, p.After.ID)) <= 0 {
			continue
		}
		rows = append(rows, u)
	}
	slices.SortFunc(rows, func(a, b *UpcomingReminder) int {
		return cmp.Or(a.On.Compare(b.On.Time), compareIDs(a.InvoiceID, b.InvoiceID))
	})
	rows = rows[:min(len(rows), p.Ahead().Limit)]
	return &Upcoming{AsOf: today, Automatic: st.Automatic, List: page.Of(rows, p.Limit)}, nil
}

func compareIDs(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) }

type sendInput struct {
	InvoiceID uuid.UUID `json:"invoice_id"`
	Level     *int      `json:"level"`
}

// SendReminder is the send-reminder capability (bound): the level named,
// or the one the invoice is due for (the next after the last sent before
// one is reached), whatever the automatic reminders' stop.
func (s *Service) SendReminder(ctx context.Context, call capability.Call) (any, error) {
	if err := invoices.RequireWriter(call.Principal); err != nil {
		return nil, err
	}
	var in sendInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	today := s.today()
	st, err := SettingsGet(ctx, s.db)
	if err != nil {
		return nil, err
	}
	list, err := openList(ctx, s.db, today, &in.InvoiceID)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		if _, err := invoices.InvoiceGetByID(ctx, s.db, in.InvoiceID); err != nil {
			return nil, err
		}
		return nil, remindable(open{}, false)
	}
	o := list[0]
	if err := remindable(o, true); err != nil {
		return nil, err
	}
	var l *Level
	if in.Level != nil {
		if l = st.level(*in.Level); l == nil {
			return nil, problem.Invalid("level", "there is no level %d: the levels are 1 to %d (GET /v1/reminders/settings)", *in.Level, len(st.Levels))
		}
	} else if d := next(st, o); d != nil {
		l = d.level
	} else {
		return nil, problem.Conflict(CodeNoLevelAhead, fmt.Sprintf("invoice %s had its reminders up to the last level, %d", o.Number, o.LastLevel))
	}
	return result(s.sendLevel(ctx, sending.ActorOf(call), o.InvoiceID, l, today))
}

type disputeInput struct {
	InvoiceID uuid.UUID `json:"invoice_id"`
	Disputed  bool      `json:"disputed"`
	Reason    string    `json:"reason"`
}

type holdInput struct {
	CustomerID uuid.UUID `json:"customer_id"`
	OnHold     bool      `json:"on_hold"`
	Reason     string    `json:"reason"`
}

// SetDispute is the set-invoice-dispute capability (bound).
func (s *Service) SetDispute(ctx context.Context, call capability.Call) (any, error) {
	var in disputeInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	return s.setFlag(ctx, call, disputes, `SELECT 1 FROM invoices WHERE id = $1 FOR NO KEY UPDATE`, "invoice", in.InvoiceID,
		in.Disputed, in.Reason, [2]string{"invoice.disputed", "invoice.dispute_resolved"})
}

// SetHold is the set-customer-hold capability (bound).
func (s *Service) SetHold(ctx context.Context, call capability.Call) (any, error) {
	var in holdInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	return s.setFlag(ctx, call, holds, `SELECT 1 FROM customers WHERE id = $1 FOR NO KEY UPDATE`, "customer", in.CustomerID,
		in.OnHold, in.Reason, [2]string{"customer.held", "customer.hold_released"})
}

// setFlag sets or clears the flag of table on the invoice or customer
// id, locked by lock against a reminder being recorded meanwhile (which
// holds it FOR SHARE). A change is audited as types[0] (set) or types[1]
// (cleared); setting what is there changes nothing but the reason.
func (s *Service) setFlag(ctx context.Context, call capability.Call, table flagTable, lock, what string, id uuid.UUID,
	set bool, reason string, types [2]string) (any, error) {
	if err := invoices.RequireWriter(call.Principal); err != nil {
		return nil, err
	}
	return result(store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (Flag, error) {
		if err := tx.QueryRow(ctx, lock, id).Scan(new(int)); err != nil {
			return Flag{}, store.MapError(err, what)
		}
		cur, err := table.getTx(ctx, tx, id)
		if err != nil {
			return Flag{}, err
		}
		next := Flag{}
		if set {
			at := s.clock()
			next = Flag{Set: true, Reason: reason, Since: &at, SetBy: &call.Principal.UserID}
			if cur.Set {
				next.Since, next.SetBy = cur.Since, cur.SetBy
			}
		}
		if (!cur.Set && !set) || (cur.Set && set && cur.Reason == reason) {
			return cur, nil
		}
		if err := table.putTx(ctx, tx, id, next); err != nil {
			return Flag{}, err
		}
		typ := types[0]
		if !set {
			typ = types[1]
		}
		_, err = audit.AppendTx(ctx, tx, audit.Event{Type: typ, ActorID: call.Principal.UserID.String(), Actor: call.Principal.Username,
			Via: string(call.Via), SubjectType: what, SubjectID: id.String(), Data: map[string]any{"reason": reason, "before": cur}})
		return next, err
	}))
}

// decode reads a call's effective input into v (the registry validated it).
func decode(call capability.Call, v any) error {
	if err := json.Unmarshal(call.Input, v); err != nil {
		return fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return nil
}

// result is a capability's answer: no output with an error.
func result[T any](out T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}
