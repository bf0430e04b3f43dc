package allowances

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

const allowanceColumns = `a.id, a.kind, a.customer_ids, a.currency, a.max_total, a.max_count, a.remaining_total, a.remaining_count,
	a.valid_until, a.reason, a.requested_by, rq.username, a.approval_id, a.deciders, a.created_at,
	a.revoked_at, a.revoked_by, rv.username, a.revoke_reason, a.version`

// allowanceFrom joins the requester's and revoker's names; FOR UPDATE OF
// a locks only the allowance.
const allowanceFrom = ` FROM allowances a JOIN users rq ON rq.id = a.requested_by LEFT JOIN users rv ON rv.id = a.revoked_by`

// scanAllowance maps a row of allowanceColumns, its status at now.
func scanAllowance(row pgx.Row, now time.Time) (*Allowance, error) {
	var (
		a         Allowance
		revokedBy *uuid.UUID
		revoker   *string
	)
	err := row.Scan(&a.ID, &a.Kind, &a.CustomerIDs, &a.Currency, &a.MaxTotal, &a.MaxCount, &a.RemainingTotal, &a.RemainingCount,
		&a.ValidUntil, &a.Reason, &a.RequestedBy.ID, &a.RequestedBy.Username, &a.ApprovalID, &a.Deciders, &a.CreatedAt,
		&a.RevokedAt, &revokedBy, &revoker, &a.RevokeReason, &a.Version)
	if err != nil {
		return nil, err
	}
	if revokedBy != nil {
		a.RevokedBy = &UserRef{ID: *revokedBy, Username: *revoker}
		t := a.RevokedAt.UTC()
		a.RevokedAt, a.revoked = &t, true
	}
	a.ValidUntil, a.CreatedAt = a.ValidUntil.UTC(), a.CreatedAt.UTC()
	a.Capabilities = a.Kind.Capabilities()
	a.Status = a.statusAt(now)
	return &a, nil
}

// allowanceGet returns allowance id at now (lock: a locking clause), 404
// when there is none.
func allowanceGet(ctx context.Context, db store.Executor, id uuid.UUID, now time.Time, lock string) (*Allowance, error) {
	a, err := scanAllowance(db.QueryRow(ctx, `SELECT `+allowanceColumns+allowanceFrom+` WHERE a.id = $1`+lock, id), now)
	return a, store.MapError(err, "allowance")
}

// allowanceExists reports whether allowance id is there.
func allowanceExists(ctx context.Context, db store.Executor, id uuid.UUID) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM allowances WHERE id = $1)`, id).Scan(&ok)
	return ok, store.MapError(err, "allowance")
}

// allowanceInsertTx stores a new allowance, whole.
func allowanceInsertTx(ctx context.Context, tx pgx.Tx, a *Allowance) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO allowances (id, kind, customer_ids, currency, max_total, max_count, remaining_total, remaining_count,
			valid_until, reason, requested_by, approval_id, deciders, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $5, $6, $7, $8, $9, $10, $11, $12)`,
		a.ID, a.Kind, a.CustomerIDs, a.Currency, a.MaxTotal, a.MaxCount, a.ValidUntil, a.Reason, a.RequestedBy.ID, a.ApprovalID, a.Deciders, a.CreatedAt)
	return store.MapError(err, "allowance")
}

// allowanceRevokeTx marks the locked allowance id revoked.
func allowanceRevokeTx(ctx context.Context, tx pgx.Tx, id, by uuid.UUID, reason string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE allowances SET revoked_at = $2, revoked_by = $3, revoke_reason = $4, version = version + 1 WHERE id = $1`,
		id, now, by, reason)
	return store.MapError(err, "allowance")
}

// ListParams page the allowances, newest first.
type ListParams struct {
	Page page.Request
}

// allowanceList returns the allowances of one page read with
// page.Request.Ahead, newest first, with their status at now.
func allowanceList(ctx context.Context, db store.Executor, p ListParams, now time.Time) ([]*Allowance, error) {
	var after struct{ at, id any }
	if c := p.Page.After; c != nil {
		after.at, after.id = c.CreatedAt, c.ID
	}
	rows, err := db.Query(ctx, `SELECT `+allowanceColumns+allowanceFrom+`
		WHERE ($1::timestamptz IS NULL OR (a.created_at, a.id) < ($1, $2::uuid))
		ORDER BY a.created_at DESC, a.id DESC LIMIT $3`, after.at, after.id, p.Page.Limit)
	if err != nil {
		return nil, store.MapError(err, "allowances")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Allowance, error) { return scanAllowance(r, now) })
	return out, store.MapError(err, "allowances")
}

// approvedByTx returns who approved request id, in decision order: the
// approvers whose decisions count.
func approvedByTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `SELECT approver_id FROM approval_decisions
		WHERE request_id = $1 AND decision = 'approve' AND voided_at IS NULL ORDER BY decided_at, approver_id`, id)
	if err != nil {
		return nil, store.MapError(err, "approval decisions")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, store.MapError(err, "approval decisions")
}

// drawn is what a draw left of an allowance.
type drawn struct {
	id             uuid.UUID
	remainingTotal int64
	remainingCount int
}

// allowanceDrawTx takes one call of amount off the in-force allowance of
// kind in currency that covers customer, was approved by at least needs
// approvers and not by drawer, the one that expires first, and reports what is left (found false:
// none covers the call). The row is chosen and locked in one statement:
// under READ COMMITTED a row another draw or a revoke changed while this
// one waited is checked again as committed, and skipped (for the next
// one in order) when it no longer covers the call, so concurrent draws
// never take more than is left and none follows a revoke that committed
// first. The table's checks are the backstop.
func allowanceDrawTx(ctx context.Context, tx pgx.Tx, kind Kind, currency string, customer, drawer uuid.UUID, amount int64, needs int, now time.Time) (drawn, bool, error) {
	var d drawn
	err := tx.QueryRow(ctx, `
		UPDATE allowances SET remaining_total = remaining_total - $5, remaining_count = remaining_count - 1, version = version + 1
		WHERE id = (
			SELECT id FROM allowances
			WHERE kind = $1 AND currency = $2 AND revoked_at IS NULL AND remaining_count > 0
			  AND valid_until > $6 AND remaining_total >= $5
			  AND (customer_ids IS NULL OR $3 = ANY (customer_ids)) AND NOT $4 = ANY (deciders) AND cardinality(deciders) >= $7
			ORDER BY valid_until, id LIMIT 1 FOR UPDATE)
		RETURNING id, remaining_total, remaining_count`,
		kind, currency, customer, drawer, amount, now, needs).Scan(&d.id, &d.remainingTotal, &d.remainingCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return drawn{}, false, nil
	}
	if err != nil {
		return drawn{}, false, store.MapError(err, "allowance")
	}
	return d, true, nil
}
