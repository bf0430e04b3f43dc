package schedules

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/invoiced/invoiced/approvals"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Config tunes the service.
type Config struct {
	// BusinessTimeZone is where a period's first day begins (default
	// UTC): the invoices' setting, so a period falls due the day aging
	// counts it.
	BusinessTimeZone *time.Location
	// Now is the clock (default time.Now); tests pin it.
	Now func() time.Time
	// Issue issues a draft through the issue-invoice capability as the
	// user would (app wires the registry): the gate draws a standing
	// allowance that covers it, or asks for an approval. Nil leaves the
	// drafts of every schedule for a person to issue.
	Issue Issuer
}

// Issuer issues draft invoiceID for user, through the gate.
type Issuer func(ctx context.Context, user, invoiceID uuid.UUID) (*invoices.Invoice, error)

// Service creates, reads and ends schedules and runs them.
type Service struct {
	db    store.Executor
	issue Issuer
	loc   *time.Location
	now   func() time.Time
}

// NewService returns the service over db.
func NewService(db store.Executor, cfg Config) *Service {
	s := &Service{db: db, loc: cfg.BusinessTimeZone, now: cfg.Now, issue: cfg.Issue}
	if s.loc == nil {
		s.loc = time.UTC
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// today is the date of now in the business time zone: civil dates, so a
// day across a DST change is still one day.
func (s *Service) today(now time.Time) invoices.Date {
	y, m, d := now.In(s.loc).Date()
	return date(y, m, d)
}

// maxTermsDays bounds payment terms: a year net is the longest in use.
const maxTermsDays = 365

// CreateInput is a schedule as its author sends it.
type CreateInput struct {
	CustomerID       uuid.UUID            `json:"customer_id"`
	Currency         *string              `json:"currency"`
	Every            string               `json:"every"`
	DayOfMonth       *int                 `json:"day_of_month"`
	Start            string               `json:"start"`
	End              *string              `json:"end"`
	Count            *int                 `json:"count"`
	Lines            []invoices.LineInput `json:"lines"`
	PaymentTermsDays *int                 `json:"payment_terms_days"`
	Issue            Issue                `json:"issue"`
	AllowanceID      *uuid.UUID           `json:"allowance_id"`
}

// CreateCap is the create-schedule capability.
func (s *Service) CreateCap(ctx context.Context, call capability.Call) (any, error) {
	if err := invoices.RequireWriter(call.Principal); err != nil {
		return nil, err
	}
	var in CreateInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return s.Create(ctx, call.Principal, call.Via, in)
}

// check builds the schedule in describes, naming every invalid field;
// the customer, its currency and the allowance are checked against db.
func (s *Service) check(ctx context.Context, db store.Executor, in CreateInput) (*Schedule, error) {
	var bad []problem.FieldError
	fail := func(field, format string, args ...any) {
		bad = append(bad, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	sc := &Schedule{ID: uuid.Must(uuid.NewV7()), CustomerID: in.CustomerID, DayOfMonth: in.DayOfMonth, Count: in.Count,
		Lines: in.Lines, PaymentTermsDays: in.PaymentTermsDays, Issue: in.Issue, AllowanceID: in.AllowanceID, CreatedAt: s.clock()}
	var err error
	if sc.Every, err = ParseEvery(in.Every); err != nil {
		fail("every", "%s", err)
	}
	if d := in.DayOfMonth; d != nil {
		switch {
		case *d < 1 || *d > 31:
			fail("day_of_month", "must be from 1 to 31 (a short month's last day stands for a day it lacks), not %d", *d)
		case sc.Every.Unit == Day || sc.Every.Unit == Week:
			fail("day_of_month", "applies to a cadence in months or years, not %s", sc.Every)
		}
	}
	if sc.Start, err = invoices.ParseDate(in.Start); err != nil {
		fail("start", "must be a date YYYY-MM-DD")
	}
	if in.End != nil {
		end, err := invoices.ParseDate(*in.End)
		switch {
		case err != nil:
			fail("end", "must be a date YYYY-MM-DD")
		case !sc.Start.IsZero() && end.Before(sc.Start.Time):
			fail("end", "is %s, before the start %s", end, sc.Start)
		}
		sc.End = &end
	}
	if in.Count != nil && *in.Count < 1 {
		fail("count", "must be at least 1, not %d", *in.Count)
	}
	if t := in.PaymentTermsDays; t != nil && (*t < 0 || *t > maxTermsDays) {
		fail("payment_terms_days", "must be from 0 to %d days net, not %d", maxTermsDays, *t)
	}
	if len(in.Lines) == 0 {
		fail("lines", "must hold at least one line")
	} else if lines, _, _, _, err := invoices.ComputeLines(in.Lines); err != nil {
		// The invoice's own rules, on the template: a period's draft
		// differs only in the descriptions' placeholder.
		pe, ok := problem.As(err)
		if !ok {
			return nil, err
		}
		bad = append(bad, pe.Errors...)
	} else {
		// Stored with their defaults (unit, VAT category) applied, as
		// every period's draft will have them.
		for i, l := range lines {
			sc.Lines[i] = l.Input()
		}
	}
	switch in.Issue {
	case IssueNever:
		if in.AllowanceID != nil {
			fail("allowance_id", "applies only with issue under_allowance")
		}
	case IssueUnderAllowance:
		if in.AllowanceID == nil {
			fail("allowance_id", "is required with issue under_allowance")
		}
	default:
		fail("issue", "must be never or under_allowance, not %q", in.Issue)
	}
	c, err := invoices.CustomerGetByID(ctx, db, in.CustomerID)
	switch {
	case problem.HasCode(err, problem.CodeNotFound):
		fail("customer_id", "there is no customer with id %s", in.CustomerID)
	case err != nil:
		return nil, err
	default:
		sc.Currency = c.Currency
		if in.Currency != nil {
			sc.Currency = *in.Currency
		}
		if !money.Valid(sc.Currency) {
			fail("currency", "must be an ISO 4217 code such as EUR, not %q", sc.Currency)
		}
	}
	if in.AllowanceID != nil {
		kind, currency, err := allowanceKindCurrency(ctx, db, *in.AllowanceID)
		switch {
		case problem.HasCode(err, problem.CodeNotFound):
			fail("allowance_id", "there is no allowance in force with id %s", *in.AllowanceID)
		case err != nil:
			return nil, err
		case kind != "issue":
			fail("allowance_id", "allowance %s covers %s, not issue", *in.AllowanceID, kind)
		case currency != sc.Currency:
			fail("allowance_id", "allowance %s is in %s, the schedule in %s", *in.AllowanceID, currency, sc.Currency)
		}
	}
	if len(bad) > 0 {
		return nil, problem.Validation(bad...)
	}
	return sc, nil
}

// Create checks in and stores it as a schedule p created, arriving by via.
func (s *Service) Create(ctx context.Context, p identity.Principal, via capability.Path, in CreateInput) (*Schedule, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Schedule, error) {
		sc, err := s.check(ctx, tx, in)
		if err != nil {
			return nil, err
		}
		sc.CreatedBy = p.UserID
		out, err := ScheduleCreate(ctx, tx, sc)
		if err != nil {
			return nil, err
		}
		_, err = audit.AppendTx(ctx, tx, audit.Event{Type: "schedule.created", ActorID: p.UserID.String(), Actor: p.Username,
			Via: string(via), SubjectType: "schedule", SubjectID: out.ID.String(),
			Data: map[string]any{"customer_id": out.CustomerID, "every": out.Every.String(), "issue": out.Issue}})
		return out, err
	})
}

// Get returns schedule id.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*Schedule, error) {
	return ScheduleGetByID(ctx, s.db, id)
}

type listInput struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// ListCap is the list-schedules capability.
func (s *Service) ListCap(ctx context.Context, call capability.Call) (any, error) {
	var in listInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	p := page.Request{Limit: in.Limit}
	if in.Cursor != "" {
		var err error
		if p.After, err = page.ParseCursor(in.Cursor); err != nil {
			return nil, err
		}
	}
	rows, err := ScheduleList(ctx, s.db, p.Ahead())
	if err != nil {
		return nil, err
	}
	return page.Of(rows, p.Limit), nil
}

// Runs returns a page of schedule id's runs, newest first.
func (s *Service) Runs(ctx context.Context, id uuid.UUID, p page.Request) (page.List[*Run], error) {
	if _, err := ScheduleGetByID(ctx, s.db, id); err != nil {
		return page.List[*Run]{}, err
	}
	rows, err := RunList(ctx, s.db, id, p.Ahead())
	if err != nil {
		return page.List[*Run]{}, err
	}
	return page.Of(rows, p.Limit), nil
}

// Delete ends schedule id for writer p arriving by via: periods it has drafted stay.
func (s *Service) Delete(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID) (*Schedule, error) {
	if err := invoices.RequireWriter(p); err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Schedule, error) {
		out, err := ScheduleDelete(ctx, tx, id, s.clock())
		if err != nil {
			return nil, err
		}
		_, err = audit.AppendTx(ctx, tx, audit.Event{Type: "schedule.deleted", ActorID: p.UserID.String(), Actor: p.Username,
			Via: string(via), SubjectType: "schedule", SubjectID: id.String()})
		return out, err
	})
}

// Run drafts, for every live schedule, each period that has begun by
// today in the business time zone and has no run yet: after downtime
// each missed period once. Each period is one transaction claiming its
// (schedule, period) row first, so two replicas or a restart never
// draft one twice; a period whose draft the invoice rules refuse is
// recorded as failed with the reason. It returns the runs it made.
func (s *Service) Run(ctx context.Context) ([]*Run, error) {
	now := s.now()
	today := s.today(now)
	live, err := SchedulesLive(ctx, s.db)
	if err != nil {
		return nil, err
	}
	var made []*Run
	for _, sc := range live {
		done, err := RunPeriodStarts(ctx, s.db, sc.ID)
		if err != nil {
			return made, err
		}
		for i := 0; ; i++ {
			p, ok := sc.Period(i)
			if !ok || p.Start.After(today.Time) {
				break
			}
			if done[p.Start.String()] {
				continue
			}
			r, err := s.runPeriod(ctx, sc, p)
			if err != nil {
				return made, err
			}
			if r != nil {
				made = append(made, r)
			}
		}
		if sc.Issue == IssueUnderAllowance && s.issue != nil {
			if err := s.issueDrafts(ctx, sc); err != nil {
				return made, err
			}
		}
	}
	return made, nil
}

// issueDrafts issues sc's drafted runs, oldest period first, as the
// schedule's creator through the gate: each draws a standing allowance
// that covers it (ADR-0022 §8: the one in force that expires first), or
// waits for the approval the gate asked for. A refusal (the creator
// disabled, the draft no longer ready) is noted on the run, which is not
// tried again; the draft stays for a person.
func (s *Service) issueDrafts(ctx context.Context, sc *Schedule) error {
	runs, err := RunsToIssue(ctx, s.db, sc.ID)
	if err != nil {
		return err
	}
	for _, r := range runs {
		inv, err := s.issue(ctx, sc.CreatedBy, *r.InvoiceID)
		pe, isProblem := problem.As(err)
		switch {
		case err == nil:
			r.Status, r.AllowanceID = RunIssued, inv.AllowanceID
		case isProblem && pe.Code == approvals.CodeApprovalRequired:
			r.Status, r.Note = RunWaiting, "no standing allowance in force covers it: it waits for an approval"
			if id, ok := pe.Extra["approval_id"].(string); ok {
				if u, err := uuid.Parse(id); err == nil {
					r.ApprovalID = &u
				}
			}
		case isProblem && pe.Status < 500:
			r.Note = "not issued: " + pe.Detail
			for _, f := range pe.Errors {
				r.Note += "; " + f.Field + ": " + f.Message
			}
		default:
			return err
		}
		if err := RunSetIssued(ctx, s.db, r); err != nil {
			return err
		}
	}
	return nil
}

// runPeriod drafts period p of sc; nil when another run has claimed it.
func (s *Service) runPeriod(ctx context.Context, sc *Schedule, p invoices.Period) (*Run, error) {
	r, err := store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Run, error) {
		r := &Run{ID: uuid.Must(uuid.NewV7()), ScheduleID: sc.ID, PeriodStart: p.Start, PeriodEnd: p.End, Status: RunDrafted, CreatedAt: s.clock()}
		if ok, err := RunClaimTx(ctx, tx, r); err != nil || !ok {
			return nil, err
		}
		inv, err := s.draftTx(ctx, tx, sc, p)
		if err != nil {
			return nil, err
		}
		r.InvoiceID = &inv.ID
		return r, RunSetInvoiceTx(ctx, tx, r.ID, inv.ID)
	})
	if pe, ok := problem.As(err); ok && pe.Status == 422 {
		// The rules changed under the template (a unit withdrawn, a
		// rate refused): the period is recorded as failed, visible in
		// the runs, and not tried again.
		return s.failPeriod(ctx, sc, p, pe)
	}
	return r, err
}

func (s *Service) failPeriod(ctx context.Context, sc *Schedule, p invoices.Period, cause *problem.Error) (*Run, error) {
	msg := cause.Detail
	for _, f := range cause.Errors {
		msg += "; " + f.Field + ": " + f.Message
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Run, error) {
		r := &Run{ID: uuid.Must(uuid.NewV7()), ScheduleID: sc.ID, PeriodStart: p.Start, PeriodEnd: p.End, Status: RunFailed, Error: msg, CreatedAt: s.clock()}
		if ok, err := RunClaimTx(ctx, tx, r); err != nil || !ok {
			return nil, err
		}
		return r, nil
	})
}

// draftTx creates period p's draft of sc in tx through the invoices
// store, as create-draft-invoice would for the schedule's creator.
func (s *Service) draftTx(ctx context.Context, tx pgx.Tx, sc *Schedule, p invoices.Period) (*invoices.Invoice, error) {
	lines, sub, tax, total, err := invoices.ComputeLines(sc.linesFor(p))
	if err != nil {
		return nil, err
	}
	period := p
	inv, err := invoices.InvoiceCreate(ctx, tx, &invoices.Invoice{ID: uuid.Must(uuid.NewV7()), CustomerID: sc.CustomerID, Currency: sc.Currency,
		Lines: lines, Subtotal: sub, TaxTotal: tax, Total: total, ServicePeriod: &period, PaymentTermsDays: sc.PaymentTermsDays, CreatedAt: s.clock()})
	if err != nil {
		return nil, err
	}
	_, err = audit.AppendTx(ctx, tx, audit.Event{Type: "invoice.draft_created", ActorID: sc.CreatedBy.String(), Via: string(capability.PathSystem),
		SubjectType: "invoice", SubjectID: inv.ID.String(),
		Data: map[string]any{"customer_id": inv.CustomerID, "currency": inv.Currency, "total": inv.Total, "lines": len(inv.Lines),
			"schedule_id": sc.ID, "period_start": p.Start, "period_end": p.End}})
	return inv, err
}
