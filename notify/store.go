package notify

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// recipient is a user a mail may go to; Email is empty when the user has
// none.
type recipient struct {
	ID    uuid.UUID
	Name  string
	Email string
}

const recipientColumns = `u.id, coalesce(nullif(u.display_name, ''), u.username), coalesce(u.email, '')`

func collectRecipients(rows pgx.Rows, err error) ([]recipient, error) {
	if err != nil {
		return nil, store.MapError(err, "recipients")
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[recipient])
	return out, store.MapError(err, "recipients")
}

// undecided returns the deciders of a at now (approvals.DecidersOf: its
// deciders and the holders of their approvals) who have not decided it,
// in person or through a delegate.
func undecided(ctx context.Context, db store.Executor, a *approvals.Approval, now time.Time) ([]recipient, error) {
	ids, err := approvals.DecidersOf(ctx, db, a, now)
	if err != nil {
		return nil, err
	}
	return collectRecipients(db.Query(ctx, `SELECT `+recipientColumns+` FROM users u
		WHERE u.id = ANY($1)
		  AND NOT EXISTS (SELECT 1 FROM approval_decisions d WHERE d.request_id = $2 AND (d.approver_id = u.id OR d.on_behalf_of = u.id))
		ORDER BY u.username`, ids, a.ID))
}

// escalatedTo returns whom a's escalation made deciders: undecided
// deciders now who were none before it.
func escalatedTo(ctx context.Context, db store.Executor, a *approvals.Approval, now time.Time) ([]recipient, error) {
	before := *a
	if a.Escalation != nil {
		e := *a.Escalation
		e.EscalatedAt = nil
		before.Escalation = &e
	}
	had, err := approvals.DecidersOf(ctx, db, &before, now)
	if err != nil {
		return nil, err
	}
	rs, err := undecided(ctx, db, a, now)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rs, func(r recipient) bool { return slices.Contains(had, r.ID) }), nil
}

// enabledUser returns user id if enabled, and whether it is.
func enabledUser(ctx context.Context, db store.Executor, id uuid.UUID) (recipient, bool, error) {
	rs, err := collectRecipients(db.Query(ctx, `SELECT `+recipientColumns+` FROM users u WHERE u.id = $1 AND NOT u.disabled`, id))
	if err != nil || len(rs) == 0 {
		return recipient{}, false, err
	}
	return rs[0], true, nil
}
