// Package approvals holds durable approval records (ADR-0010): the requests a
// consequential capability call creates, the decisions approvers make on
// them, the policy that says who may decide and how many must agree, the
// transactional gate that consumes an approval in the same transaction as
// its effect, the LISTEN/NOTIFY hub that wakes long polls and SSE streams on
// every replica, and the inbox routes.
package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Status is where an approval request is in its life.
type Status string

// The statuses: pending → approved | denied | expired | cancelled |
// superseded, and approved → consumed | expired.
const (
	StatusPending    Status = "pending"
	StatusApproved   Status = "approved"
	StatusDenied     Status = "denied"
	StatusExpired    Status = "expired"
	StatusCancelled  Status = "cancelled"
	StatusSuperseded Status = "superseded"
	StatusConsumed   Status = "consumed"
)

// ParseStatus validates a status name (the list filter).
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusPending, StatusApproved, StatusDenied, StatusExpired, StatusCancelled, StatusSuperseded, StatusConsumed:
		return st, nil
	}
	return "", problem.Invalid("status", "must be one of pending, approved, denied, expired, cancelled, superseded, consumed")
}

// Open reports whether the request can still change by a decision or by use.
func (s Status) Open() bool { return s == StatusPending || s == StatusApproved }

// Stable problem codes of this package.
const (
	CodeApprovalRequired   = "APPROVAL_REQUIRED"
	CodeApprovalDenied     = "APPROVAL_DENIED"
	CodeApprovalExpired    = "APPROVAL_EXPIRED"
	CodeApprovalStale      = "APPROVAL_STALE"
	CodeNoEligibleApprover = "NO_ELIGIBLE_APPROVER"
	CodeNotPending         = "APPROVAL_NOT_PENDING"
	CodeAlreadyDecided     = "APPROVAL_ALREADY_DECIDED"
)

// Target is what the request acts on, as it was when requested.
type Target struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

// UserRef names a user in a response.
type UserRef struct {
	ID       uuid.UUID `json:"id"`
	Username string    `json:"username"`
}

// Decision is one approver's decision on a request.
type Decision struct {
	Approver  UserRef   `json:"approver"`
	Decision  string    `json:"decision"`
	Reason    string    `json:"reason,omitempty"`
	DecidedAt time.Time `json:"decided_at"`
}

// The decisions an approver can make.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// Approval is an approval request with its decisions.
type Approval struct {
	ID                uuid.UUID       `json:"id"`
	Capability        string          `json:"capability"`
	Status            Status          `json:"status"`
	Input             json.RawMessage `json:"input"`
	InputHash         string          `json:"input_hash"`
	Target            Target          `json:"target"`
	Amount            int64           `json:"amount"`
	Currency          string          `json:"currency"`
	Snapshot          json.RawMessage `json:"snapshot"`
	RequestedBy       UserRef         `json:"requested_by"`
	RequestedVia      string          `json:"requested_via"`
	Reason            string          `json:"reason,omitempty"`
	RequiredApprovals int             `json:"required_approvals"`
	Approvals         int             `json:"approvals"`
	Decisions         []Decision      `json:"decisions"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	ExpiresAt         time.Time       `json:"expires_at"`
	DecidedAt         *time.Time      `json:"decided_at,omitempty"`
	ConsumedAt        *time.Time      `json:"consumed_at,omitempty"`
	ConsumedBy        *uuid.UUID      `json:"consumed_by,omitempty"`
	Version           int64           `json:"version"`

	expiryReported bool
}

const approvalColumns = `r.id, r.capability, r.status, r.input, r.input_hash, r.target_type, r.target_id, r.target_version,
	r.amount, r.currency, r.snapshot, r.requested_by, u.username, r.requested_via, r.reason, r.required_approvals,
	r.created_at, r.updated_at, r.expires_at, r.decided_at, r.consumed_at, r.consumed_by,
	r.expiry_reported_at IS NOT NULL, r.version`

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

func scanApproval(row pgx.Row) (*Approval, error) {
	var a Approval
	err := row.Scan(&a.ID, &a.Capability, &a.Status, &a.Input, &a.InputHash, &a.Target.Type, &a.Target.ID, &a.Target.Version,
		&a.Amount, &a.Currency, &a.Snapshot, &a.RequestedBy.ID, &a.RequestedBy.Username, &a.RequestedVia, &a.Reason, &a.RequiredApprovals,
		&a.CreatedAt, &a.UpdatedAt, &a.ExpiresAt, &a.DecidedAt, &a.ConsumedAt, &a.ConsumedBy,
		&a.expiryReported, &a.Version)
	if err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt, a.ExpiresAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC(), a.ExpiresAt.UTC()
	a.DecidedAt, a.ConsumedAt = utcPtr(a.DecidedAt), utcPtr(a.ConsumedAt)
	a.Decisions = []Decision{}
	return &a, nil
}

// ApprovalGetByID returns a request with its decisions, 404 when there is none.
func ApprovalGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*Approval, error) {
	return approvalGet(ctx, db, id, "")
}

// approvalGetForUpdate locks the request row for a decision or a transition.
func approvalGetForUpdate(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Approval, error) {
	return approvalGet(ctx, tx, id, " FOR UPDATE OF r")
}

func approvalGet(ctx context.Context, db store.Executor, id uuid.UUID, lock string) (*Approval, error) {
	var a *Approval
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if a, err = scanApproval(db.QueryRow(ctx, `SELECT `+approvalColumns+approvalFrom+` WHERE r.id = $1`+lock, id)); err != nil {
			return store.MapError(err, "approval")
		}
		return decisionsLoad(ctx, db, []*Approval{a})
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

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
		SELECT d.request_id, d.approver_id, u.username, d.decision, d.reason, d.decided_at
		FROM approval_decisions d JOIN users u ON u.id = d.approver_id
		WHERE d.request_id = ANY($1)
		ORDER BY d.decided_at, d.approver_id`, ids)
	if err != nil {
		return store.MapError(err, "approval decisions")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			reqID uuid.UUID
			d     Decision
		)
		if err := rows.Scan(&reqID, &d.Approver.ID, &d.Approver.Username, &d.Decision, &d.Reason, &d.DecidedAt); err != nil {
			return store.MapError(err, "approval decisions")
		}
		d.DecidedAt = d.DecidedAt.UTC()
		a := byID[reqID]
		a.Decisions = append(a.Decisions, d)
		if d.Decision == DecisionApprove {
			a.Approvals++
		}
	}
	return store.MapError(rows.Err(), "approval decisions")
}

// ListParams filter and page the inbox.
type ListParams struct {
	// Status filters by status; empty lists all.
	Status Status
	// After is the keyset cursor: list requests older than this id.
	After *uuid.UUID
	// Limit is the page size (1–100, default 20, as every list of the API).
	Limit int
}

// ApprovalList returns one page of requests, newest first, and whether
// there are more.
func ApprovalList(ctx context.Context, db store.Executor, p ListParams) ([]*Approval, bool, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	var after any
	if p.After != nil {
		after = *p.After
	}
	var (
		out  []*Approval
		more bool
	)
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		rows, err := db.Query(ctx, `SELECT `+approvalColumns+approvalFrom+`
			WHERE ($1 = '' OR r.status = $1) AND ($2::uuid IS NULL OR r.id < $2)
			ORDER BY r.id DESC LIMIT $3`, string(p.Status), after, p.Limit+1)
		if err != nil {
			return store.MapError(err, "approvals")
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Approval, error) { return scanApproval(r) }); err != nil {
			return store.MapError(err, "approvals")
		}
		if more = len(out) > p.Limit; more {
			out = out[:p.Limit]
		}
		return decisionsLoad(ctx, db, out)
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// refusal builds the typed problem a gate or decision answers for a.
func refusal(status int, code, detail string, a *Approval) *problem.Error {
	e := problem.New(status, code, detail)
	// target lets a frontend show what waits for approval without a
	// second request (the step loop's data-approval part carries it).
	// approval_status, not status: RFC 9457 reserves status for the HTTP
	// status code.
	e.Extra = map[string]any{"approval_id": a.ID.String(), "approval_status": string(a.Status), "target": a.Target}
	return e
}

func requiredProblem(a *Approval) *problem.Error {
	return refusal(http.StatusForbidden, CodeApprovalRequired,
		fmt.Sprintf("%s needs an approval: request %s is %s with %d of %d approvals; call again once it is approved",
			a.Capability, a.ID, a.Status, a.Approvals, a.RequiredApprovals), a)
}
