package reminders

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

const settingsSelect = `SELECT s.automatic, s.stop_after_level, s.version, s.updated_at, s.updated_by,
	coalesce((SELECT jsonb_agg(jsonb_build_object('level', l.level, 'days_past_due', l.days_past_due, 'wording', l.wording) ORDER BY l.level)
		FROM reminder_levels l), '[]')
	FROM reminder_settings s`

func scanSettings(row pgx.Row) (*Settings, error) {
	var (
		s      Settings
		levels []byte
	)
	if err := row.Scan(&s.Automatic, &s.StopAfterLevel, &s.Version, &s.UpdatedAt, &s.UpdatedBy, &levels); err != nil {
		return nil, store.MapError(err, "reminder settings")
	}
	if err := json.Unmarshal(levels, &s.Levels); err != nil {
		return nil, fmt.Errorf("reminder levels: %w", err)
	}
	return &s, nil
}

// SettingsGet reads the reminder settings with their levels.
func SettingsGet(ctx context.Context, db store.Executor) (*Settings, error) {
	return scanSettings(db.QueryRow(ctx, settingsSelect))
}

// SettingsLockTx reads the settings, holding them against another change
// until tx ends.
func SettingsLockTx(ctx context.Context, tx pgx.Tx) (*Settings, error) {
	return scanSettings(tx.QueryRow(ctx, settingsSelect+` FOR UPDATE OF s`))
}

// SettingsReplaceTx writes s as the settings, its levels replacing all.
func SettingsReplaceTx(ctx context.Context, tx pgx.Tx, s *Settings) error {
	if _, err := tx.Exec(ctx, `UPDATE reminder_settings SET automatic = $1, stop_after_level = $2, version = $3, updated_at = $4, updated_by = $5`,
		s.Automatic, s.StopAfterLevel, s.Version, s.UpdatedAt, s.UpdatedBy); err != nil {
		return store.MapError(err, "reminder settings")
	}
	if _, err := tx.Exec(ctx, `DELETE FROM reminder_levels`); err != nil {
		return store.MapError(err, "reminder levels")
	}
	for _, l := range s.Levels {
		w, err := json.Marshal(l.Wording)
		if err != nil {
			return fmt.Errorf("reminder wording: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reminder_levels (level, days_past_due, wording) VALUES ($1, $2, $3)`,
			l.Level, l.DaysPastDue, w); err != nil {
			return store.MapError(err, "reminder levels")
		}
	}
	return nil
}

// Flag is a dispute of an invoice or a hold on a customer: set, why,
// since when, by whom.
type Flag struct {
	Set    bool       `json:"set"`
	Reason string     `json:"reason"`
	Since  *time.Time `json:"since"`
	SetBy  *uuid.UUID `json:"set_by"`
}

// flagTable is where the flags of a kind are kept, keyed by column.
type flagTable struct{ table, column string }

var (
	disputes = flagTable{"invoice_disputes", "invoice_id"}
	holds    = flagTable{"customer_holds", "customer_id"}
)

// getTx reads the flag on id.
func (f flagTable) getTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Flag, error) {
	var fl Flag
	err := tx.QueryRow(ctx, `SELECT reason, since, set_by FROM `+f.table+` WHERE `+f.column+` = $1`, id).Scan(&fl.Reason, &fl.Since, &fl.SetBy)
	if err == pgx.ErrNoRows {
		return Flag{}, nil
	}
	fl.Set = err == nil
	return fl, store.MapError(err, f.table)
}

// putTx sets fl on id, or clears it when fl is not set.
func (f flagTable) putTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, fl Flag) error {
	var err error
	if fl.Set {
		_, err = tx.Exec(ctx, `INSERT INTO `+f.table+` (`+f.column+`, reason, since, set_by) VALUES ($1, $2, $3, $4)
			ON CONFLICT (`+f.column+`) DO UPDATE SET reason = excluded.reason`, id, fl.Reason, fl.Since, fl.SetBy)
	} else {
		_, err = tx.Exec(ctx, `DELETE FROM `+f.table+` WHERE `+f.column+` = $1`, id)
	}
	return store.MapError(err, f.table)
}

// open is an invoice a reminder may be due for, as of a day.
type open struct {
	InvoiceID    uuid.UUID
	Number       string
	CustomerID   uuid.UUID
	CustomerName string
	Email        string
	Language     string
	DueDate      time.Time
	DaysOverdue  int
	Balance      int64
	Currency     string
	// LastLevel is the highest level it was reminded at, 0 for none.
	LastLevel int
	Disputed  bool
	Held      bool
}

// openSQL: the issued invoices that owe and have a due date, as of $1
// (a date in the business time zone); $2 narrows to one invoice when not
// null. Disputed and held ones are flagged, not left out, so that a
// reminder by hand can say why it is refused.
const openSQL = `SELECT i.id, i.number, i.customer_id, c.name, c.email, coalesce(i.bill_to->>'language', c.language),
	i.due_date, $1::date - i.due_date, i.total - i.amount_paid - i.amount_credited, i.currency,
	coalesce((SELECT max(s.reminder_level) FROM sendings s WHERE s.invoice_id = i.id AND s.reminder_level IS NOT NULL), 0),
	EXISTS (SELECT 1 FROM invoice_disputes d WHERE d.invoice_id = i.id),
	EXISTS (SELECT 1 FROM customer_holds h WHERE h.customer_id = i.customer_id)
	FROM invoices i JOIN customers c ON c.id = i.customer_id
	WHERE i.status = 'issued' AND i.total - i.amount_paid - i.amount_credited > 0 AND i.due_date IS NOT NULL
	AND ($2::uuid IS NULL OR i.id = $2)
	ORDER BY i.due_date, i.id`

func scanOpen(row pgx.Row) (open, error) {
	var o open
	err := row.Scan(&o.InvoiceID, &o.Number, &o.CustomerID, &o.CustomerName, &o.Email, &o.Language, &o.DueDate, &o.DaysOverdue,
		&o.Balance, &o.Currency, &o.LastLevel, &o.Disputed, &o.Held)
	return o, err
}

// openList returns the open invoices as of today, or invoice alone when
// it is not nil.
func openList(ctx context.Context, db store.Executor, today invoices.Date, invoice *uuid.UUID) ([]open, error) {
	rows, err := db.Query(ctx, openSQL, today.Time, invoice)
	if err != nil {
		return nil, store.MapError(err, "invoices")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (open, error) { return scanOpen(r) })
	return out, store.MapError(err, "invoices")
}

// openShareTx reads invoice id as openList does, holding the invoice and
// its customer against a change (a payment, a void, a dispute, a hold)
// until tx ends; ok is false when it is no longer open.
func openShareTx(ctx context.Context, tx pgx.Tx, today invoices.Date, id uuid.UUID) (open, bool, error) {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM invoices i JOIN customers c ON c.id = i.customer_id WHERE i.id = $1 FOR SHARE`, id); err != nil {
		return open{}, false, store.MapError(err, "invoice")
	}
	o, err := scanOpen(tx.QueryRow(ctx, openSQL, today.Time, id))
	if err == pgx.ErrNoRows {
		return open{}, false, nil
	}
	return o, err == nil, store.MapError(err, "invoice")
}
