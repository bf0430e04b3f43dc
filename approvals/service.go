package approvals

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Service decides, cancels, expires, reads and waits on approval requests.
// The gate (Gate) creates and consumes them inside callers' transactions.
type Service struct {
	db     store.Executor
	policy Policy
	hub    *Hub
}

// NewService returns a service over db. hub may be nil, in which case
// Wait polls the database once a second instead of listening.
func NewService(db store.Executor, policy Policy, hub *Hub) *Service {
	return &Service{db: db, policy: policy.withDefaults(), hub: hub}
}

// Policy returns the service's policy with defaults filled.
func (s *Service) Policy() Policy { return s.policy }

// Waiters returns how many long polls and event streams of this process
// are waiting for changes.
func (s *Service) Waiters() int {
	if s.hub == nil {
		return 0
	}
	return s.hub.Subscribers()
}

// maxReasonLen bounds a decision reason (bytes, as the table does).
const maxReasonLen = 2000

// Decide records principal's decision (DecisionApprove or DecisionDeny)
// on request id; via names the path (rest, cli). Only enabled approver and
// admin users decide, never the requester; a denial needs a reason and
// denies at once; approvals from distinct approvers count toward the
// required number. Deciding again the same way is a no-op.
func (s *Service) Decide(ctx context.Context, p identity.Principal, via string, id uuid.UUID, decision, reason string) (*Approval, error) {
	return s.DecideIfMatch(ctx, p, via, id, 0, decision, reason)
}

// DecideIfMatch is Decide refusing with 412 VERSION_MISMATCH unless the
// request is at version ifMatch (0: any), as an If-Match header asks.
func (s *Service) DecideIfMatch(ctx context.Context, p identity.Principal, via string, id uuid.UUID, ifMatch int64, decision, reason string) (*Approval, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case decision != DecisionApprove && decision != DecisionDeny:
		return nil, problem.Invalid("decision", "must be approve or deny")
	case decision == DecisionDeny && reason == "":
		return nil, problem.Invalid("reason", "is required to deny: say what is wrong so the requester can fix it")
	case len(reason) > maxReasonLen || !utf8.ValidString(reason):
		return nil, problem.Invalid("reason", "must be valid UTF-8 of at most %d bytes", maxReasonLen)
	case strings.ContainsRune(reason, 0):
		// PostgreSQL text cannot hold it.
		return nil, problem.Invalid("reason", "must not contain the NUL character (U+0000)")
	}
	var out *Approval
	err := store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		now := s.policy.now()
		a, err := approvalGetForUpdate(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := capability.CheckIfMatch(ifMatch, a.Version); err != nil {
			return err
		}
		u, err := identity.UserGetByID(ctx, tx, p.UserID)
		if err != nil {
			return err
		}
		switch {
		case u.Disabled:
			return problem.Forbidden("your account is disabled")
		case !u.Role.CanDecide():
			return problem.Forbidden("only approver and admin users decide approvals")
		case a.RequestedBy.ID == u.ID:
			return problem.Forbidden("you requested this approval: another approver must decide it")
		}
		for _, d := range a.Decisions {
			if d.Approver.ID != u.ID {
				continue
			}
			if d.Decision == decision {
				out = a
				return nil
			}
			return refusal(http.StatusConflict, CodeAlreadyDecided, fmt.Sprintf("you already decided %s on approval %s", d.Decision, a.ID), a)
		}
		if a.Status.Open() && !now.Before(a.ExpiresAt) {
			if err := approvalExpireTx(ctx, tx, a, now, false, systemActor); err != nil {
				return err
			}
			return store.CommitAnd(refusal(http.StatusConflict, CodeApprovalExpired, fmt.Sprintf("approval %s expired at %s", a.ID, a.ExpiresAt.Format(time.RFC3339)), a))
		}
		if a.Status != StatusPending {
			return refusal(http.StatusConflict, CodeNotPending, fmt.Sprintf("approval %s is %s, not pending", a.ID, a.Status), a)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO approval_decisions (request_id, approver_id, decision, reason, decided_at) VALUES ($1, $2, $3, $4, $5)`,
			a.ID, u.ID, decision, reason, now); err != nil {
			return store.MapError(err, "approval decision")
		}
		approvals := a.Approvals
		switch {
		case decision == DecisionDeny:
			_, err = tx.Exec(ctx, `UPDATE approval_requests SET status = 'denied', decided_at = $2, updated_at = $2, version = version + 1 WHERE id = $1`, a.ID, now)
		case approvals+1 >= a.RequiredApprovals:
			// The approval's own clock starts now: an approval is
			// spendable for ApprovedTTL, however long it was pending.
			_, err = tx.Exec(ctx, `UPDATE approval_requests SET status = 'approved', decided_at = $2, updated_at = $2, expires_at = $3, version = version + 1 WHERE id = $1`,
				a.ID, now, now.Add(s.policy.ApprovedTTL))
		default:
			_, err = tx.Exec(ctx, `UPDATE approval_requests SET updated_at = $2, version = version + 1 WHERE id = $1`, a.ID, now)
		}
		if err != nil {
			return store.MapError(err, "approval")
		}
		if out, err = approvalGet(ctx, tx, a.ID, ""); err != nil {
			return err
		}
		by := eventActor{id: u.ID.String(), name: u.Username, via: via}
		if _, err := audit.AppendTx(ctx, tx, by.event("approval.decided", out, map[string]any{
			"decision": decision, "reason": reason, "approvals": out.Approvals, "required_approvals": out.RequiredApprovals,
		})); err != nil {
			return err
		}
		return notifyTx(ctx, tx, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Cancel withdraws a pending request; only its requester may.
func (s *Service) Cancel(ctx context.Context, p identity.Principal, via string, id uuid.UUID) (*Approval, error) {
	return s.CancelIfMatch(ctx, p, via, id, 0)
}

// CancelIfMatch is Cancel refusing with 412 VERSION_MISMATCH unless the
// request is at version ifMatch (0: any).
func (s *Service) CancelIfMatch(ctx context.Context, p identity.Principal, via string, id uuid.UUID, ifMatch int64) (*Approval, error) {
	var out *Approval
	err := store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		now := s.policy.now()
		a, err := approvalGetForUpdate(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := capability.CheckIfMatch(ifMatch, a.Version); err != nil {
			return err
		}
		if a.RequestedBy.ID != p.UserID {
			return problem.Forbidden("only the requester may cancel an approval request")
		}
		if a.Status != StatusPending {
			return refusal(http.StatusConflict, CodeNotPending, fmt.Sprintf("approval %s is %s, not pending", a.ID, a.Status), a)
		}
		if err := approvalSetStatus(ctx, tx, a, StatusCancelled, now); err != nil {
			return err
		}
		by := eventActor{id: p.UserID.String(), name: p.Username, via: via}
		if _, err := audit.AppendTx(ctx, tx, by.event("approval.cancelled", a, nil)); err != nil {
			return err
		}
		if err := notifyTx(ctx, tx, a); err != nil {
			return err
		}
		out, err = approvalGet(ctx, tx, a.ID, "")
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// expireBatch bounds one sweep transaction: 500 rows keep the audit lock
// short; the next sweep takes the rest.
const expireBatch = 500

// ExpireDue marks open requests past their expiry as expired, audits and
// announces each, and returns how many it expired.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	n := 0
	err := store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		n = 0
		now := s.policy.now()
		rows, err := tx.Query(ctx, `SELECT `+approvalColumns+approvalFrom+`
			WHERE r.status IN ('pending', 'approved') AND r.expires_at <= $1
			ORDER BY r.expires_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED`, now, expireBatch)
		if err != nil {
			return store.MapError(err, "approvals")
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Approval, error) { return scanApproval(r) })
		if err != nil {
			return store.MapError(err, "approvals")
		}
		for _, a := range due {
			if err := approvalExpireTx(ctx, tx, a, now, false, systemActor); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// Get returns a request, first expiring it if it is due, so a reader never
// sees a lapsed request as pending.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*Approval, error) {
	a, err := ApprovalGetByID(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	if !a.Status.Open() || s.policy.now().Before(a.ExpiresAt) {
		return a, nil
	}
	if _, err := s.ExpireDue(ctx); err != nil {
		return nil, err
	}
	return ApprovalGetByID(ctx, s.db, id)
}

// List returns a page of requests after expiring those due.
func (s *Service) List(ctx context.Context, p ListParams) ([]*Approval, bool, error) {
	if _, err := s.ExpireDue(ctx); err != nil {
		return nil, false, err
	}
	return ApprovalList(ctx, s.db, p)
}

// MaxWait bounds a long poll: a minute is below every common proxy's idle
// timeout (60–100 s), so the poll ends with an answer, not a cut.
const MaxWait = 60 * time.Second

// pollInterval is how often Wait re-reads without a hub.
const pollInterval = time.Second

// Wait returns request id as soon as its status differs from the status it
// had when Wait started, or when d has passed, whichever comes first.
func (s *Service) Wait(ctx context.Context, id uuid.UUID, d time.Duration) (*Approval, error) {
	var (
		changes <-chan Change
		stop    = func() {}
	)
	if s.hub != nil {
		// Subscribe before the first read, so a change between the read
		// and the wait is not missed.
		changes, stop = s.hub.Subscribe()
	}
	defer func() { stop() }()
	a, err := s.Get(ctx, id)
	// A closed request (denied, consumed, expired, …) never changes again:
	// answer now rather than hold the poll for nothing.
	if err != nil || d <= 0 || !a.Status.Open() {
		return a, err
	}
	start := a.Status
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for a.Status == start {
		// Wake at the request's expiry too (in wall time; the policy clock
		// is only moved by tests), since expiry is a change no one
		// announces until someone sweeps.
		next := pollInterval
		if changes != nil {
			next = d
		}
		if a.Status.Open() {
			if until := a.ExpiresAt.Sub(s.policy.now()); until < next {
				next = max(until, 10*time.Millisecond)
			}
		}
		tick := time.NewTimer(next)
		reread := false
		select {
		case <-ctx.Done():
			tick.Stop()
			return nil, ctx.Err()
		case <-deadline.C:
			tick.Stop()
			return a, nil
		case <-tick.C:
			reread = true
		case c, ok := <-changes:
			tick.Stop()
			if !ok {
				if s.hub.Closed() {
					// Shutting down: answer with what is known now.
					return a, nil
				}
				// Lagged: resubscribe and re-read.
				stop()
				changes, stop = s.hub.Subscribe()
				reread = true
			} else {
				reread = c.Resync || c.ID == id
			}
		}
		if reread {
			if a, err = s.Get(ctx, id); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}
