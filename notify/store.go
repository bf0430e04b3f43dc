package notify

import (
	"context"

	"github.com/google/uuid"
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

// deciders returns the enabled users who could decide a request of
// requester: approvers and admins, never the requester (as the gate counts
// them).
func deciders(ctx context.Context, db store.Executor, requester uuid.UUID) ([]recipient, error) {
	return collectRecipients(db.Query(ctx, `SELECT `+recipientColumns+` FROM users u
		WHERE u.role IN ('approver', 'admin') AND NOT u.disabled AND u.id <> $1
		ORDER BY u.username`, requester))
}

// undecided returns the deciders of request id who have not decided it.
func undecided(ctx context.Context, db store.Executor, id, requester uuid.UUID) ([]recipient, error) {
	return collectRecipients(db.Query(ctx, `SELECT `+recipientColumns+` FROM users u
		WHERE u.role IN ('approver', 'admin') AND NOT u.disabled AND u.id <> $1
		  AND NOT EXISTS (SELECT 1 FROM approval_decisions d WHERE d.request_id = $2 AND d.approver_id = u.id)
		ORDER BY u.username`, requester, id))
}

// enabledUser returns user id if enabled, and whether it is.
func enabledUser(ctx context.Context, db store.Executor, id uuid.UUID) (recipient, bool, error) {
	rs, err := collectRecipients(db.Query(ctx, `SELECT `+recipientColumns+` FROM users u WHERE u.id = $1 AND NOT u.disabled`, id))
	if err != nil || len(rs) == 0 {
		return recipient{}, false, err
	}
	return rs[0], true, nil
}
