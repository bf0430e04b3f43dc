package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/events"
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
	emit  events.Emitter
	issue Issuer
	loc   *time.Location
	now   func() time.Time
}

// NewService returns the service over db, recording its events with emit.
func NewService(db store.Executor, emit events.Emitter, cfg Config) *Service {
	s := &Service{db: db, emit: emit, loc: cfg.BusinessTimeZone, now: cfg.Now, issue: cfg.Issue}
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
// the customer, its currency and, unless keptAllowance, the allowance are
// checked against db. keptAllowance is a change that leaves the
// schedule's allowance as it was: one revoked since is the gate's to
// refuse at issue, not a reason to refuse changing the lines.
func (s *Service) check(ctx context.Context, db store.Executor, in CreateInput, keptAllowance bool) (*Schedule, error) {
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
	if in.AllowanceID != nil && !keptAllowance {
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
		sc, err := s.check(ctx, tx, in, false)
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

// UpdateInput is a change to a schedule: members left out stay as they
// are; end, count, payment_terms_days and allowance_id may be null to
// clear them; lines replace all lines. The cadence, start, customer and
// currency stay: the periods already run are counted from them.
type UpdateInput struct {
	ScheduleID       uuid.UUID            `json:"schedule_id"`
	End              json.RawMessage      `json:"end"`
	Count            json.RawMessage      `json:"count"`
	Lines            []invoices.LineInput `json:"lines"`
	PaymentTermsDays json.RawMessage      `json:"payment_terms_days"`
	Issue            *Issue               `json:"issue"`
	AllowanceID      json.RawMessage      `json:"allowance_id"`
}

// UpdateCap is the update-schedule capability.
func (s *Service) UpdateCap(ctx context.Context, call capability.Call) (any, error) {
	if err := invoices.RequireWriter(call.Principal); err != nil {
		return nil, err
	}
	var in UpdateInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return s.Update(ctx, call.Principal, call.Via, call.IfMatch, in)
}

// patch sets *dst from raw when raw is present: JSON null clears it.
func patch[T any](raw json.RawMessage, dst **T) error {
	if len(raw) == 0 {
		return nil
	}
	if string(raw) == "null" {
		*dst = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	*dst = &v
	return nil
}

// Update applies in to a live schedule for writer p arriving by via,
// when its version matches ifMatch (if given): the whole schedule is
// checked again as at its creation, every invalid field is named and
// nothing is written. Periods already drafted keep their drafts; the
// next periods are drafted from the schedule as changed.
func (s *Service) Update(ctx context.Context, p identity.Principal, via capability.Path, ifMatch etag.IfMatch, in UpdateInput) (*Schedule, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Schedule, error) {
		cur, err := ScheduleLockTx(ctx, tx, in.ScheduleID)
		if err != nil {
			return nil, err
		}
		if err := etag.CheckIfMatch(ifMatch, cur.Version); err != nil {
			return nil, err
		}
		next := CreateInput{CustomerID: cur.CustomerID, Currency: &cur.Currency, Every: cur.Every.String(), DayOfMonth: cur.DayOfMonth,
			Start: cur.Start.String(), Count: cur.Count, Lines: cur.Lines, PaymentTermsDays: cur.PaymentTermsDays, Issue: cur.Issue,
			AllowanceID: cur.AllowanceID}
		if cur.End != nil {
			end := cur.End.String()
			next.End = &end
		}
		// The schema has checked each member's type.
		if err := errors.Join(patch(in.End, &next.End), patch(in.Count, &next.Count),
			patch(in.PaymentTermsDays, &next.PaymentTermsDays), patch(in.AllowanceID, &next.AllowanceID)); err != nil {
			return nil, fmt.Errorf("update-schedule: decode effective input: %w", err)
		}
		if in.Lines != nil {
			next.Lines = in.Lines
		}
		if in.Issue != nil {
			next.Issue = *in.Issue
			if next.Issue == IssueNever && len(in.AllowanceID) == 0 {
				// Issuing off drops the allowance it drew on.
				next.AllowanceID = nil
			}
		}
		kept := len(in.AllowanceID) == 0 && (in.Issue == nil || *in.Issue == cur.Issue)
		sc, err := s.check(ctx, tx, next, kept)
		if err != nil {
			return nil, err
		}
		sc.ID = cur.ID
		out, err := ScheduleUpdateTx(ctx, tx, sc, s.clock())
		if err != nil {
			return nil, err
		}
		changed := []string{}
		for name, raw := range map[string]bool{"end": len(in.End) > 0, "count": len(in.Count) > 0, "lines": in.Lines != nil,
			"payment_terms_days": len(in.PaymentTermsDays) > 0, "issue": in.Issue != nil, "allowance_id": len(in.AllowanceID) > 0} {
			if raw {
				changed = append(changed, name)
			}
		}
		slices.Sort(changed)
		_, err = audit.AppendTx(ctx, tx, audit.Event{Type: "schedule.updated", ActorID: p.UserID.String(), Actor: p.Username,
			Via: string(via), SubjectType: "schedule", SubjectID: out.ID.String(),
			Data: map[string]any{"fields": changed, "version": out.Version, "issue": out.Issue}})
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
// recorded as failed with the reason. Then it issues what there is to
// issue (issueAll). It returns the runs it drafted or failed.
func (s *Service) Run(ctx context.Context) ([]*Run, error) {
	today := s.today(s.now())
	live, err := SchedulesLive(ctx, s.db)
	if err != nil {
		return nil, err
	}
	progress, err := RunProgress(ctx, s.db)
	if err != nil {
		return nil, err
	}
	var made []*Run
	for _, sc := range live {
		first, done, err := s.firstToRun(ctx, sc, progress[sc.ID])
		if err != nil {
			return made, err
		}
		for i := first; ; i++ {
			p, ok := sc.Period(i)
			if !ok || p.Start.After(today.Time) {
				break
			}
			if done[p.Start.String()] {
				continue
			}
			r, err := s.runPeriod(ctx, sc.ID, i)
			if err != nil {
				return made, err
			}
			if r != nil {
				made = append(made, r)
			}
		}
	}
	if s.issue == nil {
		return made, nil
	}
	return made, s.issueAll(ctx)
}

// firstToRun is the index of the first period of sc that may lack a run,
// and the starts of those it has run from there (nil: none). Periods are
// run in order and only their end and count can change, so the runs of
// a schedule are its first periods: n runs whose latest starts period
// n-1 are periods 0 to n-1. Anything else reads the schedule's runs.
func (s *Service) firstToRun(ctx context.Context, sc *Schedule, p Progress) (int, map[string]bool, error) {
	if p.Runs == 0 {
		return 0, nil, nil
	}
	if last, ok := sc.Period(p.Runs - 1); ok && last.Start.Equal(p.Latest) {
		return p.Runs, nil, nil
	}
	done, err := RunPeriodStarts(ctx, s.db, sc.ID)
	return 0, done, err
}

// issueAll issues, oldest period first and each as its schedule's
// creator through the gate, the drafts of runs made while their schedule
// issued, and the drafts of waiting runs whose approval has since been
// approved. Each draws a standing allowance that covers it (ADR-0022 §8:
// the one in force that expires first), or waits for the approval the
// gate asked for. A refusal (the creator disabled, the draft no longer
// ready) is noted on the run, which is not tried again; the draft stays
// for a person.
func (s *Service) issueAll(ctx context.Context) error {
	runs, err := RunsToIssue(ctx, s.db)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := s.issueRun(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// issueRun issues run id's draft while holding the run's row: another
// replica (or `invoiced schedules run`) waits for it, then finds the run
// done, so whoever's Run returns has seen every due run dealt with. The
// run records what the issue came to, or, when the service died between
// the issue's commit and this record, the next pass finds the invoice
// issued and records that.
func (s *Service) issueRun(ctx context.Context, id uuid.UUID) error {
	return store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		r, err := runToIssueLockTx(ctx, tx, id)
		if err != nil || r == nil {
			return err
		}
		if r.InvoiceID == nil {
			r.Status, r.Note = RunDrafted, "not issued: its draft was deleted"
			return s.recordRunTx(ctx, tx, &r.Run)
		}
		if r.invoiceStatus != invoices.StatusDraft {
			r.Status, r.AllowanceID, r.Note = RunIssued, r.drewAllowance, ""
			return s.recordRunTx(ctx, tx, &r.Run)
		}
		// The issue is a transaction of its own on the pool, as any
		// path's: this one holds only the run's row meanwhile.
		inv, err := s.issue(ctx, r.createdBy, *r.InvoiceID)
		pe, isProblem := problem.As(err)
		switch {
		case err == nil:
			r.Status, r.AllowanceID, r.Note = RunIssued, inv.AllowanceID, ""
		case isProblem && pe.Code == approvals.CodeApprovalRequired:
			r.Status, r.Note = RunWaiting, "no standing allowance in force covers it: it waits for an approval"
			if id, ok := pe.Extra["approval_id"].(string); ok {
				if u, err := uuid.Parse(id); err == nil {
					r.ApprovalID = &u
				}
			}
		case isProblem && pe.Status < 500:
			// Issued by a person meanwhile is not a refusal to record.
			now, err := invoices.InvoiceGetByID(ctx, tx, *r.InvoiceID)
			if err != nil {
				return err
			}
			if now.Status != invoices.StatusDraft {
				r.Status, r.Note = RunIssued, ""
				break
			}
			r.Status, r.Note = RunDrafted, "not issued: "+pe.Detail
			for _, f := range pe.Errors {
				r.Note += "; " + f.Field + ": " + f.Message
			}
		default:
			return err
		}
		return s.recordRunTx(ctx, tx, &r.Run)
	})
}

// recordRunTx stores what became of run r and announces it.
func (s *Service) recordRunTx(ctx context.Context, tx pgx.Tx, r *Run) error {
	if err := RunSetIssuedTx(ctx, tx, r); err != nil {
		return err
	}
	return s.emitRunTx(ctx, tx, r)
}

// emitRunTx records the schedule.run event of r in tx: once a period is
// drafted for a person, failed, issued, left drafted with a note, or
// waiting; a waiting run announces again once it is issued.
func (s *Service) emitRunTx(ctx context.Context, tx pgx.Tx, r *Run) error {
	return s.emit.EmitTx(ctx, tx, events.New(events.ScheduleRun, s.clock(), r))
}

// runPeriod drafts the i-th period of schedule id, from the schedule as
// it is in the period's transaction; nil when another run has claimed
// the period, or the schedule has been deleted or no longer has it.
func (s *Service) runPeriod(ctx context.Context, id uuid.UUID, i int) (*Run, error) {
	var sc *Schedule
	var p invoices.Period
	r, err := store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Run, error) {
		var err error
		if sc, err = ScheduleShareTx(ctx, tx, id); err != nil || sc == nil {
			return nil, err
		}
		var ok bool
		if p, ok = sc.Period(i); !ok {
			return nil, nil
		}
		r := &Run{ID: uuid.Must(uuid.NewV7()), ScheduleID: sc.ID, PeriodStart: p.Start, PeriodEnd: p.End, Status: RunDrafted,
			Issue: sc.Issue, CreatedAt: s.clock()}
		if ok, err := RunClaimTx(ctx, tx, r); err != nil || !ok {
			return nil, err
		}
		inv, err := s.draftTx(ctx, tx, sc, p)
		if err != nil {
			return nil, err
		}
		r.InvoiceID = &inv.ID
		if err := RunSetInvoiceTx(ctx, tx, r.ID, inv.ID); err != nil {
			return nil, err
		}
		if sc.Issue == IssueUnderAllowance && s.issue != nil {
			// Announced once issueAll has tried it.
			return r, nil
		}
		return r, s.emitRunTx(ctx, tx, r)
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
		r := &Run{ID: uuid.Must(uuid.NewV7()), ScheduleID: sc.ID, PeriodStart: p.Start, PeriodEnd: p.End, Status: RunFailed, Error: msg,
			Issue: sc.Issue, CreatedAt: s.clock()}
		if ok, err := RunClaimTx(ctx, tx, r); err != nil || !ok {
			return nil, err
		}
		return r, s.emitRunTx(ctx, tx, r)
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
