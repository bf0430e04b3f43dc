package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// ---- approval requests ----

var approvalColumns = `r.id, r.capability, r.status, r.input, r.input_hash, r.target_type, r.target_id, r.target_version,
	r.amount, r.currency, r.snapshot, r.requested_by, u.username, r.requested_via, r.reason, r.required_approvals,
	r.created_at, r.updated_at, r.expires_at, r.decided_at, r.consumed_at, r.consumed_by,
	r.expiry_reported_at IS NOT NULL, r.version,
	r.policy_version, r.policy_rule_id, r.policy_required, r.required_raised_version, r.policy_window,
	r.deciders_role, ` + usersJSON("r.deciders_ids") + `, r.escalate_at, r.escalate_role, ` + usersJSON("r.escalate_ids") + `, r.escalated_at`

// approvalFrom joins the requester's name; FOR UPDATE OF r locks only the
// request.
const approvalFrom = ` FROM approval_requests r JOIN users u ON u.id = r.requested_by`

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// scanApproval maps a row of approvalColumns; Decisions is empty until
// decisionsLoad fills it.
func scanApproval(row pgx.Row) (*Approval, error) {
	var (
		a              Approval
		policyVersion  *int64
		policyRule     *uuid.UUID
		policyRequired *int
		dRole, eRole   *string
		dUsers, eUsers []byte
		escAt, escDone *time.Time
	)
	err := row.Scan(&a.ID, &a.Capability, &a.Status, &a.Input, &a.InputHash, &a.Target.Type, &a.Target.ID, &a.Target.Version,
		&a.Amount, &a.Currency, &a.Snapshot, &a.RequestedBy.ID, &a.RequestedBy.Username, &a.RequestedVia, &a.Reason, &a.RequiredApprovals,
		&a.CreatedAt, &a.UpdatedAt, &a.ExpiresAt, &a.DecidedAt, &a.ConsumedAt, &a.ConsumedBy,
		&a.expiryReported, &a.Version,
		&policyVersion, &policyRule, &policyRequired, &a.RequiredRaisedBy, &a.Windows,
		&dRole, &dUsers, &escAt, &eRole, &eUsers, &escDone)
	if err != nil {
		return nil, err
	}
	if a.Deciders, err = audienceOf(dRole, dUsers); err != nil {
		return nil, err
	}
	if escAt != nil {
		to, err := audienceOf(eRole, eUsers)
		if err != nil {
			return nil, err
		}
		a.Escalation = &RequestEscalation{At: escAt.UTC(), Audience: *to, EscalatedAt: utcPtr(escDone)}
	}
	if policyVersion != nil {
		a.Policy = &PolicyRef{Version: *policyVersion, RuleID: policyRule, RequiredApprovals: *policyRequired}
	}
	a.CreatedAt, a.UpdatedAt, a.ExpiresAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC(), a.ExpiresAt.UTC()
	a.DecidedAt, a.ConsumedAt = utcPtr(a.DecidedAt), utcPtr(a.ConsumedAt)
	a.Decisions = []Decision{}
	return &a, nil
}

func collectApprovals(rows pgx.Rows) ([]*Approval, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Approval, error) { return scanApproval(r) })
}

// ApprovalGetByID returns a request with its decisions, 404 when there is none.
func ApprovalGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*Approval, error) {
	return approvalGet(ctx, db, id, "")
}

// ApprovalGetConsumed returns the request that was spent on capability's
// call on target (type and id), with its decisions: who asked and who
// approved an invoice's issue, for its page. 404 when none was.
func ApprovalGetConsumed(ctx context.Context, db store.Executor, capability, targetType, targetID string) (*Approval, error) {
	return approvalFind(ctx, db, ` WHERE r.capability = $1 AND r.target_type = $2 AND r.target_id = $3 AND r.status = 'consumed'
		ORDER BY r.consumed_at DESC LIMIT 1`, capability, targetType, targetID)
}

// approvalLockTx returns a request with its decisions, locked for a
// decision or a transition.
func approvalLockTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Approval, error) {
	return approvalGet(ctx, tx, id, " FOR UPDATE OF r")
}

func approvalGet(ctx context.Context, db store.Executor, id uuid.UUID, lock string) (*Approval, error) {
	return approvalFind(ctx, db, ` WHERE r.id = $1`+lock, id)
}

// approvalFind returns the one request the rest of the query (where and
// what follows it) selects, with its decisions.
func approvalFind(ctx context.Context, db store.Executor, rest string, args ...any) (*Approval, error) {
	var a *Approval
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if a, err = scanApproval(db.QueryRow(ctx, `SELECT `+approvalColumns+approvalFrom+rest, args...)); err != nil {
			return store.MapError(err, "approval")
		}
		return decisionsLoad(ctx, db, []*Approval{a})
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// approvalLatestLockTx returns the newest request of a binding, locked,
// and whether there is one. Newest is by target version first, then the
// open request (at most one per version) before closed ones, and only then
// by creation time: created_at comes from the clock of whichever replica
// wrote the row, and a replica running fast (or one whose clock stepped
// back) must not keep a superseded request on top, where the gate would
// never see the approved one behind it. Decisions are not loaded.
func approvalLatestLockTx(ctx context.Context, tx pgx.Tx, capName, targetType, targetID, inputHash string) (*Approval, bool, error) {
	a, err := scanApproval(tx.QueryRow(ctx, `SELECT `+approvalColumns+approvalFrom+`
		WHERE r.capability = $1 AND r.target_type = $2 AND r.target_id = $3 AND r.input_hash = $4
		ORDER BY r.target_version DESC, r.status IN ('pending', 'approved') DESC, r.created_at DESC, r.id DESC
		LIMIT 1 FOR UPDATE OF r`, capName, targetType, targetID, inputHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, store.MapError(err, "approval")
	}
	return a, true, nil
}

// ListParams filter and page the inbox.
type ListParams struct {
	// Status filters by status; empty lists all.
	Status Status
	// Page is the page size and the keyset position (newest first).
	Page page.Request
}

// ApprovalList returns the requests of one page read with
// page.Request.Ahead, newest first.
func ApprovalList(ctx context.Context, db store.Executor, p ListParams) ([]*Approval, error) {
	var after struct {
		at any
		id any
	}
	if c := p.Page.After; c != nil {
		after.at, after.id = c.CreatedAt, c.ID
	}
	var out []*Approval
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		out, err = approvalsQuery(ctx, db, `
			WHERE ($1 = '' OR r.status = $1) AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2, $3::uuid))
			ORDER BY r.created_at DESC, r.id DESC LIMIT $4`, string(p.Status), after.at, after.id, p.Page.Limit)
		if err != nil {
			return err
		}
		return decisionsLoad(ctx, db, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// approvalsDueLockTx returns up to limit open requests whose expiry is
// at or before now, locked; rows another transaction holds are skipped
// (the next sweep takes them). Decisions are not loaded.
func approvalsDueLockTx(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]*Approval, error) {
	return approvalsQuery(ctx, tx, `
		WHERE r.status IN ('pending', 'approved') AND r.expires_at <= $1
		ORDER BY r.expires_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED`, now, limit)
}

// approvalsEscalationDueLockTx returns up to limit pending, unexpired
// requests whose escalation is due at now and not yet recorded, locked;
// rows another transaction holds are skipped (it may be escalating them).
func approvalsEscalationDueLockTx(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]*Approval, error) {
	out, err := approvalsQuery(ctx, tx, `
		WHERE r.status = 'pending' AND r.escalate_at <= $1 AND r.escalated_at IS NULL AND r.expires_at > $1
		ORDER BY r.escalate_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED`, now, limit)
	if err != nil {
		return nil, err
	}
	return out, decisionsLoad(ctx, tx, out)
}

// approvalEscalateTx records that the locked request a escalated at now;
// a is updated to match.
func approvalEscalateTx(ctx context.Context, tx pgx.Tx, a *Approval, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET escalated_at = $2, updated_at = $2, version = version + 1 WHERE id = $1`, a.ID, now)
	if err != nil {
		return store.MapError(err, "approval")
	}
	a.Escalation.EscalatedAt, a.UpdatedAt, a.Version = &now, now, a.Version+1
	return nil
}

// approvalsDecidedByLockTx returns the open, unexpired requests on which
// approver has a decision that counts, locked in id order (the order every
// caller that locks several requests takes them in). A request past its
// expiry at now is expired whatever its status says until a sweep marks
// it: history, which keeps its decisions (ADR-0012 §1). Decisions are not
// loaded.
func approvalsDecidedByLockTx(ctx context.Context, tx pgx.Tx, approver uuid.UUID, now time.Time) ([]*Approval, error) {
	return approvalsQuery(ctx, tx, `
		WHERE r.status IN ('pending', 'approved') AND r.expires_at > $2
		  AND EXISTS (SELECT 1 FROM approval_decisions d WHERE d.request_id = r.id AND (d.approver_id = $1 OR d.on_behalf_of = $1) AND d.voided_at IS NULL)
		ORDER BY r.id FOR UPDATE OF r`, approver, now)
}

// approvalsOpenLockTx returns the open requests of capName unexpired at
// now, locked in id order. Decisions are not loaded.
func approvalsOpenLockTx(ctx context.Context, tx pgx.Tx, capName string, now time.Time) ([]*Approval, error) {
	return approvalsQuery(ctx, tx, `
		WHERE r.capability = $1 AND r.status IN ('pending', 'approved') AND r.expires_at > $2
		ORDER BY r.id FOR UPDATE OF r`, capName, now)
}

// approvalsQuery reads the requests that where (a WHERE clause and what
// follows it, over approvalFrom's r) selects. Decisions are not loaded.
func approvalsQuery(ctx context.Context, db store.Executor, where string, args ...any) ([]*Approval, error) {
	rows, err := db.Query(ctx, `SELECT `+approvalColumns+approvalFrom+where, args...)
	if err != nil {
		return nil, store.MapError(err, "approvals")
	}
	out, err := collectApprovals(rows)
	if err != nil {
		return nil, store.MapError(err, "approvals")
	}
	return out, nil
}

// approvalInsertTx inserts a pending request from a's ID, Capability,
// Input, InputHash, Target, Amount, Currency, Snapshot, RequestedBy.ID,
// RequestedVia, Reason, CreatedAt and ExpiresAt, raised under req.
func approvalInsertTx(ctx context.Context, tx pgx.Tx, a *Approval, req Requirement) error {
	var (
		rule     *uuid.UUID
		deciders *Audience
		escAt    *time.Time
		esc      *Audience
	)
	if r := req.Rule; r != nil {
		rule, deciders = &r.ID, r.Deciders
		if e := r.Escalation; e != nil {
			at := a.CreatedAt.Add(time.Duration(e.After))
			escAt, esc = &at, &e.Audience
		}
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO approval_requests (id, capability, input_hash, input, target_type, target_id, target_version,
			amount, currency, snapshot, status, requested_by, requested_via, reason, required_approvals,
			created_at, updated_at, expires_at, policy_version, policy_rule_id, policy_required, policy_window,
			deciders_role, deciders_ids, escalate_at, escalate_role, escalate_ids)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11, $12, $13, $14, $15, $15, $16, $17, $18, $14, $19,
			$20, $21, $22, $23, $24)`,
		a.ID, a.Capability, a.InputHash, string(a.Input), a.Target.Type, a.Target.ID, a.Target.Version,
		a.Amount, a.Currency, string(a.Snapshot), a.RequestedBy.ID, string(a.RequestedVia), a.Reason, req.Approvers,
		a.CreatedAt, a.ExpiresAt, req.Version, rule, req.Windows,
		deciders.role(), deciders.ids(), escAt, esc.role(), esc.ids())
	return store.MapError(err, "approval")
}

// approvalRaiseTx records on the locked open request a that req asks more
// approvers than it needed; reopen returns an approved request to pending
// until expiresAt. a is updated to match.
func approvalRaiseTx(ctx context.Context, tx pgx.Tx, a *Approval, req Requirement, reopen bool, expiresAt, now time.Time) error {
	windows := a.Windows
	if req.Windows != nil {
		windows = req.Windows
	}
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET required_approvals = $2, required_raised_version = $3,
			status = CASE WHEN $4 THEN 'pending' ELSE status END,
			decided_at = CASE WHEN $4 THEN NULL ELSE decided_at END,
			expires_at = $5, updated_at = $6, version = version + 1, policy_window = $7
		WHERE id = $1`, a.ID, req.Approvers, req.Version, reopen, expiresAt, now, windows)
	if err != nil {
		return store.MapError(err, "approval")
	}
	a.RequiredApprovals, a.RequiredRaisedBy, a.ExpiresAt, a.UpdatedAt, a.Version = req.Approvers, &req.Version, expiresAt, now, a.Version+1
	a.Windows = windows
	if reopen {
		a.Status, a.DecidedAt = StatusPending, nil
	}
	return nil
}

// approvalSetStatusTx moves a locked request to status.
func approvalSetStatusTx(ctx context.Context, tx pgx.Tx, a *Approval, to Status, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET status = $2, updated_at = $3, version = version + 1 WHERE id = $1`, a.ID, string(to), now)
	if err != nil {
		return store.MapError(err, "approval")
	}
	a.Status, a.UpdatedAt, a.Version = to, now, a.Version+1
	return nil
}

// approvalExpireTx marks a locked open request expired; reported says the
// caller is answering APPROVAL_EXPIRED right now.
func approvalExpireTx(ctx context.Context, tx pgx.Tx, a *Approval, now time.Time, reported bool) error {
	var reportedAt any
	if reported {
		reportedAt = now
	}
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET status = 'expired', updated_at = $2, expiry_reported_at = $3, version = version + 1
		WHERE id = $1`, a.ID, now, reportedAt)
	if err != nil {
		return store.MapError(err, "approval")
	}
	a.Status, a.UpdatedAt, a.Version = StatusExpired, now, a.Version+1
	return nil
}

// approvalExpiryReportedTx records that a caller was answered
// APPROVAL_EXPIRED for an expired request, so the next call requests anew.
func approvalExpiryReportedTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET expiry_reported_at = $2 WHERE id = $1`, id, now)
	return store.MapError(err, "approval")
}

// approvalDenyTx closes a locked pending request as denied.
func approvalDenyTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET status = 'denied', decided_at = $2, updated_at = $2, version = version + 1 WHERE id = $1`, id, now)
	return store.MapError(err, "approval")
}

// approvalApproveTx marks a locked pending request approved, spendable
// until expiresAt.
func approvalApproveTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, now, expiresAt time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET status = 'approved', decided_at = $2, updated_at = $2, expires_at = $3, version = version + 1 WHERE id = $1`,
		id, now, expiresAt)
	return store.MapError(err, "approval")
}

// approvalReopenTx returns a locked approved request to pending, open
// for decisions until expiresAt.
func approvalReopenTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, now, expiresAt time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET status = 'pending', decided_at = NULL, updated_at = $2, expires_at = $3, version = version + 1
		WHERE id = $1`, id, now, expiresAt)
	return store.MapError(err, "approval")
}

// approvalTouchTx bumps a locked request's version, for a decision that
// leaves its status as it is (an approval short of the quorum).
func approvalTouchTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_requests SET updated_at = $2, version = version + 1 WHERE id = $1`, id, now)
	return store.MapError(err, "approval")
}

// approvalConsumeTx spends a locked approved request on invocation inv,
// records the effect it lets through (effectArgs) and announces it, the
// UPDATE, the effect and the pg_notify in one round trip, so the
// serialised part of an issue is as short as it can be. a is updated to
// the consumed state first, since the announcement carries it.
func approvalConsumeTx(ctx context.Context, tx pgx.Tx, a *Approval, inv uuid.UUID, effect []any, now time.Time) error {
	a.Status, a.ConsumedAt, a.ConsumedBy, a.Version = StatusConsumed, &now, &inv, a.Version+1
	payload, err := changePayload(a)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE approval_requests SET status = 'consumed', consumed_at = $2, consumed_by = $3, updated_at = $2, version = version + 1
		WHERE id = $1 AND status = 'approved'`, a.ID, now, inv)
	b.Queue(effectInsertSQL, effect...)
	b.Queue(`SELECT pg_notify($1, $2)`, Channel, payload)
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	for range 2 {
		if err == nil {
			_, err = br.Exec()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return store.MapError(err, "approval")
	}
	if tag.RowsAffected() != 1 {
		// The row is locked by this transaction, so this cannot happen
		// unless the lock was lost: refuse rather than grant twice.
		return problem.Internal(fmt.Errorf("approval %s: consume matched %d rows", a.ID, tag.RowsAffected()))
	}
	return nil
}

// approvalNotifyTx announces a's state; Postgres delivers it at commit, so
// a rolled-back change is never announced.
func approvalNotifyTx(ctx context.Context, tx pgx.Tx, a *Approval) error {
	payload, err := changePayload(a)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, payload)
	return store.MapError(err, "approval notification")
}

// changePayload is the NOTIFY payload announcing a's state.
func changePayload(a *Approval) (string, error) {
	b, err := json.Marshal(Change{ID: a.ID, Status: a.Status, Version: a.Version})
	if err != nil {
		return "", fmt.Errorf("notify payload: %w", err)
	}
	return string(b), nil
}

// ---- decisions ----

// decisionsLoad fills Decisions and Approvals of each approval in one query.
func decisionsLoad(ctx context.Context, db store.Executor, as []*Approval) error {
	if len(as) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(as))
	byID := make(map[uuid.UUID]*Approval, len(as))
	for i, a := range as {
		ids[i] = a.ID
		byID[a.ID] = a
	}
	rows, err := db.Query(ctx, `
		SELECT d.request_id, d.approver_id, u.username, d.decision, d.reason, d.decided_at, d.voided_at, d.void_reason,
			u.role, u.disabled, d.on_behalf_of, b.username, b.role, b.disabled
		FROM approval_decisions d JOIN users u ON u.id = d.approver_id LEFT JOIN users b ON b.id = d.on_behalf_of
		WHERE d.request_id = ANY($1)
		ORDER BY d.decided_at, d.id`, ids)
	if err != nil {
		return store.MapError(err, "approval decisions")
	}
	defer rows.Close()
	for rows.Next() {
		reqID, d, err := scanDecision(rows)
		if err != nil {
			return store.MapError(err, "approval decisions")
		}
		a := byID[reqID]
		a.Decisions = append(a.Decisions, d)
		if d.Decision == DecisionApprove && d.Counts {
			a.Approvals++
		}
	}
	return store.MapError(rows.Err(), "approval decisions")
}

// scanDecision maps a decision row and the id of its request.
func scanDecision(row pgx.Row) (uuid.UUID, Decision, error) {
	var (
		reqID      uuid.UUID
		d          Decision
		voidReason *string
		behalf     *uuid.UUID
		behalfName *string
		behalfRole *identity.Role
		behalfOff  *bool
	)
	if err := row.Scan(&reqID, &d.Approver.ID, &d.Approver.Username, &d.Decision, &d.Reason, &d.DecidedAt, &d.VoidedAt, &voidReason,
		&d.approver.role, &d.approver.disabled, &behalf, &behalfName, &behalfRole, &behalfOff); err != nil {
		return uuid.Nil, Decision{}, err
	}
	if behalf != nil {
		d.OnBehalfOf = &UserRef{ID: *behalf, Username: *behalfName}
		d.delegator = &authority{role: *behalfRole, disabled: *behalfOff}
	}
	d.DecidedAt, d.VoidedAt = d.DecidedAt.UTC(), utcPtr(d.VoidedAt)
	d.Counts = d.VoidedAt == nil
	if voidReason != nil {
		d.VoidReason = VoidReason(*voidReason)
	}
	return reqID, d, nil
}

// decisionInsertTx records approverID's decision on request id, made on
// behalf of a delegator (nil: on their own authority).
func decisionInsertTx(ctx context.Context, tx pgx.Tx, id, approverID uuid.UUID, onBehalfOf *uuid.UUID, decision, reason string, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO approval_decisions (request_id, approver_id, on_behalf_of, decision, reason, decided_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		id, approverID, onBehalfOf, decision, reason, now)
	return store.MapError(err, "approval decision")
}

// decisionVoidTx voids approverID's counting decision on request id.
func decisionVoidTx(ctx context.Context, tx pgx.Tx, id, approverID uuid.UUID, reason VoidReason, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE approval_decisions SET voided_at = $3, void_reason = $4
		WHERE request_id = $1 AND approver_id = $2 AND voided_at IS NULL`, id, approverID, now, string(reason))
	return store.MapError(err, "approval decision")
}
