package invoices

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// DefaultNumberPrefix is the series prefix when Config.NumberPrefix is empty.
const DefaultNumberPrefix = "INV"

// Config tunes the service.
type Config struct {
	// NumberPrefix starts every invoice number (default INV).
	NumberPrefix string
	// Now is the clock (default time.Now); tests pin it.
	Now func() time.Time
}

// Service runs the invoicing capabilities over a database.
type Service struct {
	db     store.Executor
	gate   capability.Gate
	prefix string
	now    func() time.Time
}

// NewService returns the service. gate authorizes the consequential
// capabilities (issue-invoice, delete-invoice); pass RefuseGate{} until the
// approvals gate exists, never a gate that allows everything.
func NewService(db store.Executor, gate capability.Gate, cfg Config) *Service {
	s := &Service{db: db, gate: gate, prefix: cfg.NumberPrefix, now: cfg.Now}
	if s.prefix == "" {
		s.prefix = DefaultNumberPrefix
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

// requireWriter refuses principals whose role may not change invoices or
// customers (DESIGN.md §7: approvers read and decide, clerks and admins
// write).
func requireWriter(p identity.Principal) error {
	if p.Role == identity.RoleClerk || p.Role == identity.RoleAdmin {
		return nil
	}
	return problem.Forbidden(fmt.Sprintf("the %s role may read invoices and customers but not change them", p.Role))
}

func decode(call capability.Call, v any) error {
	if err := json.Unmarshal(call.Input, v); err != nil {
		// The registry validated the input against the schema, so this
		// is a schema/struct mismatch: a bug, not a client error.
		return fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return nil
}

func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, problem.Invalid(field, "must be a UUID")
	}
	return id, nil
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

// ---- customers ----

type customerInput struct {
	CustomerID string  `json:"customer_id"`
	Name       *string `json:"name"`
	Email      *string `json:"email"`
	Currency   *string `json:"currency"`
}

func checkCurrency(field, c string) error {
	if !money.Valid(c) {
		return problem.Invalid(field, "%q is not an ISO 4217 currency code", c)
	}
	return nil
}

// CustomerCreate is the create-customer capability.
func (s *Service) CustomerCreate(ctx context.Context, call capability.Call) (any, error) {
	if err := requireWriter(call.Principal); err != nil {
		return nil, err
	}
	var in customerInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	if err := checkCurrency("currency", *in.Currency); err != nil {
		return nil, err
	}
	c := &Customer{ID: uuid.Must(uuid.NewV7()), Name: *in.Name, Currency: *in.Currency, CreatedAt: s.clock()}
	if in.Email != nil {
		c.Email = *in.Email
	}
	var out *Customer
	err := store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if out, err = CustomerCreate(ctx, tx, c); err != nil {
			return err
		}
		return s.audit(ctx, tx, call, "customer.created", "customer", out.ID, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CustomerUpdate is the update-customer capability.
func (s *Service) CustomerUpdate(ctx context.Context, call capability.Call) (any, error) {
	if err := requireWriter(call.Principal); err != nil {
		return nil, err
	}
	var in customerInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	id, err := parseID("customer_id", in.CustomerID)
	if err != nil {
		return nil, err
	}
	if in.Currency != nil {
		if err := checkCurrency("currency", *in.Currency); err != nil {
			return nil, err
		}
	}
	var out *Customer
	err = store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		c, err := CustomerLockTx(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := capability.CheckIfMatch(call.IfMatch, c.Version); err != nil {
			return err
		}
		if in.Name != nil {
			c.Name = *in.Name
		}
		if in.Email != nil {
			c.Email = *in.Email
		}
		if in.Currency != nil {
			c.Currency = *in.Currency
		}
		if out, err = CustomerUpdateTx(ctx, tx, c, s.clock()); err != nil {
			return err
		}
		if err := InvoiceDraftsTouchByCustomerTx(ctx, tx, c.ID, s.clock()); err != nil {
			return err
		}
		return s.audit(ctx, tx, call, "customer.updated", "customer", out.ID, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CustomerGet is the get-customer capability.
func (s *Service) CustomerGet(ctx context.Context, call capability.Call) (any, error) {
	var in customerInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	id, err := parseID("customer_id", in.CustomerID)
	if err != nil {
		return nil, err
	}
	return CustomerGetByID(ctx, s.db, id)
}

type customerListInput struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// CustomerListAll is the list-customers capability.
func (s *Service) CustomerListAll(ctx context.Context, call capability.Call) (any, error) {
	var in customerListInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	p := page.Request{Limit: in.Limit}
	if in.Cursor != "" {
		var err error
		if p.After, err = page.ParseCursor(in.Cursor); err != nil {
			return nil, err
		}
	}
	rows, err := CustomerList(ctx, s.db, p.Ahead())
	if err != nil {
		return nil, err
	}
	return page.Of(rows, p.Limit), nil
}

// ---- invoices ----

type draftInput struct {
	InvoiceID  string          `json:"invoice_id"`
	CustomerID *string         `json:"customer_id"`
	Currency   *string         `json:"currency"`
	DueDate    json.RawMessage `json:"due_date"`
	Memo       *string         `json:"memo"`
	Lines      *[]LineInput    `json:"lines"`
}

// dueDate parses an optional, nullable due date that must not be before
// the issue date (today for a draft). ok is false when there is none.
func (s *Service) dueDate(raw json.RawMessage) (d Date, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Date{}, false, nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return Date{}, false, problem.Invalid("due_date", "must be a date YYYY-MM-DD")
	}
	if d, err = ParseDate(str); err != nil {
		return Date{}, false, problem.Invalid("due_date", "must be a date YYYY-MM-DD")
	}
	if today := s.today(); d.Before(today.Time) {
		return Date{}, false, problem.Invalid("due_date", "must not be before the issue date (%s)", today)
	}
	return d, true, nil
}

func (s *Service) dueDatePtr(raw json.RawMessage) (*Date, error) {
	d, ok, err := s.dueDate(raw)
	if err != nil || !ok {
		return nil, err
	}
	return &d, nil
}

func customerExists(ctx context.Context, db store.Executor, raw string) (*Customer, error) {
	id, err := parseID("customer_id", raw)
	if err != nil {
		return nil, err
	}
	c, err := CustomerGetByID(ctx, db, id)
	if problem.HasCode(err, problem.CodeNotFound) {
		return nil, problem.Invalid("customer_id", "there is no customer with id %s", id)
	}
	return c, err
}

// DraftCreate is the create-draft-invoice capability.
func (s *Service) DraftCreate(ctx context.Context, call capability.Call) (any, error) {
	if err := requireWriter(call.Principal); err != nil {
		return nil, err
	}
	var in draftInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	due, err := s.dueDatePtr(in.DueDate)
	if err != nil {
		return nil, err
	}
	if in.Currency != nil {
		if err := checkCurrency("currency", *in.Currency); err != nil {
			return nil, err
		}
	}
	var lineIn []LineInput
	if in.Lines != nil {
		lineIn = *in.Lines
	}
	lines, sub, tax, total, err := ComputeLines(lineIn)
	if err != nil {
		return nil, err
	}
	inv := &Invoice{ID: uuid.Must(uuid.NewV7()), DueDate: due, Lines: lines, Subtotal: sub, TaxTotal: tax, Total: total, CreatedAt: s.clock()}
	if in.Memo != nil {
		inv.Memo = *in.Memo
	}
	var out *Invoice
	err = store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		c, err := customerExists(ctx, tx, *in.CustomerID)
		if err != nil {
			return err
		}
		inv.CustomerID, inv.Currency = c.ID, c.Currency
		if in.Currency != nil {
			inv.Currency = *in.Currency
		}
		if out, err = InvoiceCreate(ctx, tx, inv); err != nil {
			return err
		}
		return s.audit(ctx, tx, call, "invoice.draft_created", "invoice", out.ID, map[string]any{
			"customer_id": out.CustomerID, "currency": out.Currency, "total": out.Total, "lines": len(out.Lines)})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DraftUpdate is the update-draft-invoice capability: absent fields stay,
// lines (when sent) replace all lines.
func (s *Service) DraftUpdate(ctx context.Context, call capability.Call) (any, error) {
	if err := requireWriter(call.Principal); err != nil {
		return nil, err
	}
	var in draftInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	id, err := parseID("invoice_id", in.InvoiceID)
	if err != nil {
		return nil, err
	}
	var out *Invoice
	err = store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		inv, err := InvoiceLockTx(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := capability.CheckIfMatch(call.IfMatch, inv.Version); err != nil {
			return err
		}
		if _, err := Transition(inv.Status, ActionUpdate); err != nil {
			return err
		}
		if in.Currency != nil && *in.Currency != inv.Currency {
			return problem.Invalid("currency", "the draft is in %s and its currency cannot change; create a new draft instead", inv.Currency)
		}
		if in.CustomerID != nil {
			c, err := customerExists(ctx, tx, *in.CustomerID)
			if err != nil {
				return err
			}
			inv.CustomerID = c.ID
		}
		if len(in.DueDate) > 0 {
			if inv.DueDate, err = s.dueDatePtr(in.DueDate); err != nil {
				return err
			}
		}
		if in.Memo != nil {
			inv.Memo = *in.Memo
		}
		if in.Lines != nil {
			if inv.Lines, inv.Subtotal, inv.TaxTotal, inv.Total, err = ComputeLines(*in.Lines); err != nil {
				return err
			}
		}
		if out, err = InvoiceUpdateDraftTx(ctx, tx, inv, s.clock()); err != nil {
			return err
		}
		return s.audit(ctx, tx, call, "invoice.draft_updated", "invoice", out.ID, map[string]any{
			"version": out.Version, "total": out.Total, "lines": len(out.Lines)})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type targetInput struct {
	InvoiceID string `json:"invoice_id"`
	Reason    string `json:"reason"`
}

// InvoiceGet is the get-invoice capability.
func (s *Service) InvoiceGet(ctx context.Context, call capability.Call) (any, error) {
	var in targetInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	id, err := parseID("invoice_id", in.InvoiceID)
	if err != nil {
		return nil, err
	}
	return InvoiceGetByID(ctx, s.db, id)
}

// lockForAction opens the common start of every invoice mutation: lock
// the row, honour If-Match, check the status machine.
func lockForAction(ctx context.Context, tx pgx.Tx, call capability.Call, id uuid.UUID, action Action) (*Invoice, error) {
	inv, err := InvoiceLockTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := capability.CheckIfMatch(call.IfMatch, inv.Version); err != nil {
		return nil, err
	}
	if _, err := Transition(inv.Status, action); err != nil {
		return nil, err
	}
	return inv, nil
}

// authorize builds the gate's target (the invoice as the approver will see
// it) and asks the gate; its refusal is returned as is, so a
// store.CommitAnd refusal still commits what the gate recorded.
func (s *Service) authorize(ctx context.Context, tx pgx.Tx, call capability.Call, inv *Invoice) (capability.Grant, error) {
	c, err := CustomerGetByID(ctx, tx, inv.CustomerID)
	if err != nil {
		return capability.Grant{}, err
	}
	snap, err := json.Marshal(Snapshot{Invoice: inv, Customer: c})
	if err != nil {
		return capability.Grant{}, fmt.Errorf("snapshot: %w", err)
	}
	return s.gate.AuthorizeTx(ctx, tx, call, capability.Target{
		Type: "invoice", ID: inv.ID.String(), Version: inv.Version,
		Amount: inv.Total, Currency: inv.Currency, Snapshot: snap,
	})
}

func (s *Service) targetID(call capability.Call) (uuid.UUID, targetInput, error) {
	var in targetInput
	if err := decode(call, &in); err != nil {
		return uuid.Nil, in, err
	}
	id, err := parseID("invoice_id", in.InvoiceID)
	return id, in, err
}

// Issue is the issue-invoice capability (consequential). In one
// transaction: lock, state checks (nothing is created or consumed when
// they fail), the gate, the audit event, then the number as the last write.
func (s *Service) Issue(ctx context.Context, call capability.Call) (any, error) {
	if err := requireWriter(call.Principal); err != nil {
		return nil, err
	}
	id, _, err := s.targetID(call)
	if err != nil {
		return nil, err
	}
	var out *Invoice
	err = store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		inv, err := lockForAction(ctx, tx, call, id, ActionIssue)
		if err != nil {
			return err
		}
		now := s.clock()
		if len(inv.Lines) == 0 {
			return problem.Invalid("lines", "an invoice needs at least one line to be issued")
		}
		if inv.DueDate != nil && inv.DueDate.Before(s.today().Time) {
			return problem.Invalid("due_date", "the due date %s is before the issue date %s; update the draft first", inv.DueDate, s.today())
		}
		grant, err := s.authorize(ctx, tx, call, inv)
		if err != nil {
			return err
		}
		// The audit event precedes the numbering so that the series row
		// lock is the last one taken; the number is on the invoice row
		// the event names.
		if err := s.audit(ctx, tx, call, "invoice.issued", "invoice", inv.ID, map[string]any{
			"approval_id": grant.ApprovalID, "invocation_id": grant.InvocationID,
			"version": inv.Version, "total": inv.Total, "currency": inv.Currency, "series": s.prefix,
		}); err != nil {
			return err
		}
		out, err = InvoiceIssueTx(ctx, tx, inv.ID, s.prefix, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete is the delete-invoice capability (consequential): only drafts.
func (s *Service) Delete(ctx context.Context, call capability.Call) (any, error) {
	if err := requireWriter(call.Principal); err != nil {
		return nil, err
	}
	id, _, err := s.targetID(call)
	if err != nil {
		return nil, err
	}
	err = store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		inv, err := lockForAction(ctx, tx, call, id, ActionDelete)
		if err != nil {
			return err
		}
		grant, err := s.authorize(ctx, tx, call, inv)
		if err != nil {
			return err
		}
		if err := InvoiceDeleteTx(ctx, tx, inv.ID); err != nil {
			return err
		}
		return s.audit(ctx, tx, call, "invoice.deleted", "invoice", inv.ID, map[string]any{
			"approval_id": grant.ApprovalID, "invocation_id": grant.InvocationID,
			"version": inv.Version, "total": inv.Total, "currency": inv.Currency,
		})
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": id, "deleted": true}, nil
}

func (s *Service) settle(ctx context.Context, call capability.Call, action Action, event string) (any, error) {
	if err := requireWriter(call.Principal); err != nil {
		return nil, err
	}
	id, in, err := s.targetID(call)
	if err != nil {
		return nil, err
	}
	var out *Invoice
	err = store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		inv, err := lockForAction(ctx, tx, call, id, action)
		if err != nil {
			return err
		}
		to, _ := Transition(inv.Status, action)
		if out, err = InvoiceSetStatusTx(ctx, tx, inv.ID, to, s.clock()); err != nil {
			return err
		}
		data := map[string]any{"version": out.Version, "number": out.Number}
		if in.Reason != "" {
			data["reason"] = in.Reason
		}
		return s.audit(ctx, tx, call, event, "invoice", out.ID, data)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Void is the void-invoice capability: issued → void.
func (s *Service) Void(ctx context.Context, call capability.Call) (any, error) {
	return s.settle(ctx, call, ActionVoid, "invoice.voided")
}

// MarkPaid is the mark-invoice-paid capability: issued → paid.
func (s *Service) MarkPaid(ctx context.Context, call capability.Call) (any, error) {
	return s.settle(ctx, call, ActionMarkPaid, "invoice.paid")
}
