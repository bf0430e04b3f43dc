package schedules

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

const scheduleColumns = `id, customer_id, currency, every_n, every_unit, day_of_month, start_date, end_date, count,
	lines, payment_terms_days, issue, allowance_id, created_by, created_at, deleted_at`

func scanSchedule(row pgx.Row) (*Schedule, error) {
	var s Schedule
	var start time.Time
	var end *time.Time
	if err := row.Scan(&s.ID, &s.CustomerID, &s.Currency, &s.Every.N, &s.Every.Unit, &s.DayOfMonth, &start, &end, &s.Count,
		&s.Lines, &s.PaymentTermsDays, &s.Issue, &s.AllowanceID, &s.CreatedBy, &s.CreatedAt, &s.DeletedAt); err != nil {
		return nil, err
	}
	s.Start = invoices.Date{Time: start}
	if end != nil {
		s.End = &invoices.Date{Time: *end}
	}
	return &s, nil
}

func dateArg(d *invoices.Date) any {
	if d == nil {
		return nil
	}
	return d.Time
}

// ScheduleCreate inserts s.
func ScheduleCreate(ctx context.Context, db store.Executor, s *Schedule) (*Schedule, error) {
	out, err := scanSchedule(db.QueryRow(ctx, `
		INSERT INTO schedules (id, customer_id, currency, every_n, every_unit, day_of_month, start_date, end_date, count,
			lines, payment_terms_days, issue, allowance_id, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		RETURNING `+scheduleColumns,
		s.ID, s.CustomerID, s.Currency, s.Every.N, s.Every.Unit, s.DayOfMonth, s.Start.Time, dateArg(s.End), s.Count,
		s.Lines, s.PaymentTermsDays, s.Issue, s.AllowanceID, s.CreatedBy, s.CreatedAt))
	return out, store.MapError(err, "schedule")
}

// ScheduleGetByID returns schedule id, deleted or not.
func ScheduleGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*Schedule, error) {
	out, err := scanSchedule(db.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, problem.NotFound("schedule")
	}
	return out, store.MapError(err, "schedule")
}

// ScheduleList returns a page of live schedules, newest first.
func ScheduleList(ctx context.Context, db store.Executor, p page.Request) ([]*Schedule, error) {
	var after struct{ at, id any }
	if c := p.After; c != nil {
		after.at, after.id = c.CreatedAt, c.ID
	}
	rows, err := db.Query(ctx, `SELECT `+scheduleColumns+` FROM schedules
		WHERE deleted_at IS NULL AND ($1::timestamptz IS NULL OR (created_at, id) < ($1, $2::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $3`, after.at, after.id, p.Limit)
	if err != nil {
		return nil, store.MapError(err, "schedules")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Schedule, error) { return scanSchedule(r) })
	return out, store.MapError(err, "schedules")
}

// SchedulesLive returns every live schedule, for a run.
func SchedulesLive(ctx context.Context, db store.Executor) ([]*Schedule, error) {
	rows, err := db.Query(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE deleted_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, store.MapError(err, "schedules")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Schedule, error) { return scanSchedule(r) })
	return out, store.MapError(err, "schedules")
}

// ScheduleDelete ends schedule id at at: no period is drafted after it.
func ScheduleDelete(ctx context.Context, db store.Executor, id uuid.UUID, at time.Time) (*Schedule, error) {
	out, err := scanSchedule(db.QueryRow(ctx, `UPDATE schedules SET deleted_at = $2
		WHERE id = $1 AND deleted_at IS NULL RETURNING `+scheduleColumns, id, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, problem.NotFound("schedule")
	}
	return out, store.MapError(err, "schedule")
}

const runColumns = `id, schedule_id, period_start, period_end, invoice_id, status, error, approval_id, allowance_id, note, created_at`

func scanRun(row pgx.Row) (*Run, error) {
	var r Run
	var start, end time.Time
	if err := row.Scan(&r.ID, &r.ScheduleID, &start, &end, &r.InvoiceID, &r.Status, &r.Error, &r.ApprovalID, &r.AllowanceID, &r.Note, &r.CreatedAt); err != nil {
		return nil, err
	}
	r.PeriodStart, r.PeriodEnd = invoices.Date{Time: start}, invoices.Date{Time: end}
	return &r, nil
}

// RunClaimTx inserts r unless its period has a run; ok is false when it
// has (another replica or an earlier run drafted it). A concurrent claim
// of the same period waits on the unique key until this one ends.
func RunClaimTx(ctx context.Context, tx pgx.Tx, r *Run) (ok bool, err error) {
	tag, err := tx.Exec(ctx, `INSERT INTO schedule_runs (id, schedule_id, period_start, period_end, invoice_id, status, error, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (schedule_id, period_start) DO NOTHING`,
		r.ID, r.ScheduleID, r.PeriodStart.Time, r.PeriodEnd.Time, r.InvoiceID, r.Status, r.Error, r.CreatedAt)
	if err != nil {
		return false, store.MapError(err, "schedule run")
	}
	return tag.RowsAffected() == 1, nil
}

// RunSetInvoiceTx records the draft run id made.
func RunSetInvoiceTx(ctx context.Context, tx pgx.Tx, id, invoiceID uuid.UUID) error {
	_, err := tx.Exec(ctx, `UPDATE schedule_runs SET invoice_id = $2 WHERE id = $1`, id, invoiceID)
	return store.MapError(err, "schedule run")
}

// RunSetIssued records what issuing run id's draft came to; a run that
// is already issued or waiting is left as it is (two replicas may try
// the same draft: the one the gate let through records it).
func RunSetIssued(ctx context.Context, db store.Executor, r *Run) error {
	_, err := db.Exec(ctx, `UPDATE schedule_runs SET status = $2, approval_id = $3, allowance_id = $4, note = $5
		WHERE id = $1 AND status = 'drafted'`, r.ID, r.Status, r.ApprovalID, r.AllowanceID, r.Note)
	return store.MapError(err, "schedule run")
}

// RunsToIssue returns schedule id's drafted runs whose draft is still a
// draft and has not been tried: a crash between drafting and issuing
// leaves them for the next run.
func RunsToIssue(ctx context.Context, db store.Executor, id uuid.UUID) ([]*Run, error) {
	rows, err := db.Query(ctx, `SELECT `+prefixedRun("r.")+` FROM schedule_runs r JOIN invoices i ON i.id = r.invoice_id
		WHERE r.schedule_id = $1 AND r.status = 'drafted' AND r.note = '' AND i.status = 'draft' ORDER BY r.period_start`, id)
	if err != nil {
		return nil, store.MapError(err, "schedule runs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Run, error) { return scanRun(r) })
	return out, store.MapError(err, "schedule runs")
}

func prefixedRun(p string) string {
	cols := strings.Split(runColumns, ", ")
	for i, c := range cols {
		cols[i] = p + c
	}
	return strings.Join(cols, ", ")
}

// RunPeriodStarts returns the starts of the periods schedule id has run.
// (YYYY-MM-DD).
func RunPeriodStarts(ctx context.Context, db store.Executor, id uuid.UUID) (map[string]bool, error) {
	rows, err := db.Query(ctx, `SELECT period_start FROM schedule_runs WHERE schedule_id = $1`, id)
	if err != nil {
		return nil, store.MapError(err, "schedule runs")
	}
	starts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, store.MapError(err, "schedule runs")
	}
	out := make(map[string]bool, len(starts))
	for _, s := range starts {
		out[s.Format(time.DateOnly)] = true
	}
	return out, nil
}

// RunList returns a page of schedule id's runs, newest first.
func RunList(ctx context.Context, db store.Executor, id uuid.UUID, p page.Request) ([]*Run, error) {
	var after struct{ at, id any }
	if c := p.After; c != nil {
		after.at, after.id = c.CreatedAt, c.ID
	}
	rows, err := db.Query(ctx, `SELECT `+runColumns+` FROM schedule_runs
		WHERE schedule_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $4`, id, after.at, after.id, p.Limit)
	if err != nil {
		return nil, store.MapError(err, "schedule runs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Run, error) { return scanRun(r) })
	return out, store.MapError(err, "schedule runs")
}

// allowanceKindCurrency returns an in-force allowance's kind and currency.
func allowanceKindCurrency(ctx context.Context, db store.Executor, id uuid.UUID) (kind, currency string, err error) {
	err = db.QueryRow(ctx, `SELECT kind, currency FROM allowances WHERE id = $1 AND revoked_at IS NULL`, id).Scan(&kind, &currency)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", problem.NotFound("allowance")
	}
	return kind, currency, store.MapError(err, "allowance")
}
