package approvals

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/text"
	"github.com/jackc/pgx/v5"
)

// Service decides, cancels, expires, reads and waits on approval requests.
// The gate (Gate) creates and consumes them inside callers' transactions.
type Service struct {
	db     store.Executor
	policy Policy
	hub    *Hub
	emit   events.Emitter
}

// NewService returns a service over db that records approval.decided and
// approval.expired through emit. hub may be nil, in which case Wait polls
// the database once a second instead of listening.
func NewService(db store.Executor, policy Policy, hub *Hub, emit events.Emitter) *Service {
	return &Service{db: db, policy: policy.withDefaults(), hub: hub, emit: emit}
}

// Policy returns the service's policy with defaults filled.
func (s *Service) Policy() Policy { return s.policy }

// Waiters returns how many long polls and event streams of this process
// are waiting for changes (how tests know a poll is waiting).
func (s *Service) Waiters() int {
	if s.hub == nil {
		return 0
	}
	return s.hub.Subscribers()
}

// maxReasonLen bounds a decision reason (bytes, as the table does).
const maxReasonLen = 2000

// Decide records p's decision (DecisionApprove or DecisionDeny) on
// request id, arriving by via. Only enabled approver and admin users
// decide, never the requester; a denial needs a reason and denies at once;
// approvals from distinct approvers count toward the required number.
// Deciding again the same way is a no-op. The request must be at a
// version ifMatch names, if it names any (an If-Match header), else 412
// VERSION_MISMATCH.
func (s *Service) Decide(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID, ifMatch etag.IfMatch, decision, reason string) (*Approval, error) {
	reason = strings.TrimSpace(reason)
	if err := checkDecision(decision, reason); err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Approval, error) {
		// The decider's row before the request's (see live.go): a change
		// of their authority waits for this decision, or this decision
		// for it and then sees it.
		u, err := identity.UserLockShareTx(ctx, tx, p.UserID)
		if err != nil {
			return nil, err
		}
		return s.changeTx(ctx, tx, id, ifMatch, func(ctx context.Context, tx pgx.Tx, a *Approval, now time.Time) (*Approval, error) {
			return s.decideAs(ctx, tx, u, via, a, now, decision, reason)
		})
	})
}

// decideAs records u's decision on the locked request a, after the
// checks that refuse who may not decide it or what cannot be decided.
func (s *Service) decideAs(ctx context.Context, tx pgx.Tx, u *identity.User, via capability.Path, a *Approval, now time.Time, decision, reason string) (*Approval, error) {
	switch {
	case u.Disabled:
		return nil, problem.Forbidden("your account is disabled")
	case !u.Role.CanDecide():
		return nil, problem.Forbidden("only approver and admin users decide approvals")
	case a.RequestedBy.ID == u.ID:
		return nil, problem.Forbidden("you requested this approval: another approver must decide it")
	}
	for _, d := range a.Decisions {
		// A voided decision is history: its approver, entitled
		// again, decides anew.
		if d.Approver.ID != u.ID || !d.Counts {
			continue
		}
		if d.Decision == decision {
			return a, nil
		}
		return nil, refusal(http.StatusConflict, CodeAlreadyDecided, fmt.Sprintf("you already decided %s on approval %s", d.Decision, a.ID), a)
	}
	if a.Status.Open() && !now.Before(a.ExpiresAt) {
		if err := expireTx(ctx, tx, s.emit, a, now, false, systemActor); err != nil {
			return nil, err
		}
		return nil, store.CommitAnd(refusal(http.StatusConflict, CodeApprovalExpired, fmt.Sprintf("approval %s expired at %s", a.ID, a.ExpiresAt.Format(time.RFC3339)), a))
	}
	if a.Status != StatusPending {
		return nil, notPendingProblem(a)
	}
	// Who may decide is judged here, under the request's lock and with
	// the decider's delegations share-locked, so a delegation ended or a
	// decision of the same voice committing meanwhile is seen.
	escalated := a.escalationDue(now)
	if escalated {
		if err := s.escalateTx(ctx, tx, a, now, systemActor); err != nil {
			return nil, err
		}
	}
	st, err := standingLockTx(ctx, tx, u, now)
	if err != nil {
		return nil, err
	}
	onBehalf, err := st.decider(a)
	if err != nil {
		// An escalation recorded on the way stands.
		if escalated {
			return nil, store.CommitAnd(err)
		}
		return nil, err
	}
	return s.decideTx(ctx, tx, eventActor{id: u.ID.String(), name: u.Username, via: via}, u.ID, onBehalf, st, a, now, decision, reason)
}

// checkDecision refuses a decision or reason that can never be recorded.
// A reason is free text the requester reads (text.Prose: no
// bidirectional or other control characters), and a denial's must show
// something: invisible characters alone say nothing of what to fix.
func checkDecision(decision, reason string) error {
	switch {
	case decision != DecisionApprove && decision != DecisionDeny:
		return problem.Invalid("decision", "must be approve or deny")
	case len(reason) > maxReasonLen:
		return problem.Invalid("reason", "must be at most %d bytes", maxReasonLen)
	}
	if r, bad := jsondoc.UnstorableText(reason); bad {
		return problem.Invalid("reason", "%s", r.Message())
	}
	if err := text.Prose(reason); err != nil {
		return problem.Invalid("reason", "%s", err)
	}
	if decision == DecisionDeny && !text.Shows(reason) {
		return problem.Invalid("reason", "is required to deny: say what is wrong so the requester can fix it")
	}
	return nil
}

// decideTx records approver's decision on the locked pending request a,
// moves a to its new status, audits and announces it.
func (s *Service) decideTx(ctx context.Context, tx pgx.Tx, by eventActor, approver uuid.UUID, onBehalf *UserRef, st *standing,
	a *Approval, now time.Time, decision, reason string,
) (*Approval, error) {
	var behalfID *uuid.UUID
	if onBehalf != nil {
		behalfID = &onBehalf.ID
	}
	if err := decisionInsertTx(ctx, tx, a.ID, approver, behalfID, decision, reason, now); err != nil {
		return nil, err
	}
	var err error
	switch {
	case decision == DecisionDeny:
		err = approvalDenyTx(ctx, tx, a.ID, now)
	case a.Approvals+1 >= a.RequiredApprovals:
		// The approval's own clock starts now: an approval is
		// spendable for ApprovedTTL, however long it was pending.
		err = approvalApproveTx(ctx, tx, a.ID, now, now.Add(s.policy.ApprovedTTL))
	default:
		err = approvalTouchTx(ctx, tx, a.ID, now)
	}
	if err != nil {
		return nil, err
	}
	out, err := approvalGet(ctx, tx, a.ID, "")
	if err != nil {
		return nil, err
	}
	// An approval short of the quorum decides nothing yet.
	if out.Status != StatusPending {
		if err := s.emit.EmitTx(ctx, tx, events.New(events.ApprovalDecided, now, out)); err != nil {
			return nil, err
		}
	}
	data := map[string]any{
		"decision": decision, "reason": reason, "approvals": out.Approvals, "required_approvals": out.RequiredApprovals,
	}
	// The actor is the event's; the delegator whose authority they used,
	// and everyone whose approvals they held, are the decision's record
	// of delegation.
	if onBehalf != nil {
		data["on_behalf_of"] = *onBehalf
	}
	if len(st.from) > 0 {
		held := make([]UserRef, len(st.from))
		for i, f := range st.from {
			held[i] = f.UserRef
		}
		data["holding_approvals_of"] = held
	}
	if _, err := audit.AppendTx(ctx, tx, by.event("approval.decided", out, data)); err != nil {
		return nil, err
	}
	return out, approvalNotifyTx(ctx, tx, out)
}

// Cancel withdraws a pending request; only its requester may. ifMatch is
// as for Decide.
func (s *Service) Cancel(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID, ifMatch etag.IfMatch) (*Approval, error) {
	return s.change(ctx, id, ifMatch, func(ctx context.Context, tx pgx.Tx, a *Approval, now time.Time) (*Approval, error) {
		if a.RequestedBy.ID != p.UserID {
			return nil, problem.Forbidden("only the requester may cancel an approval request")
		}
		if a.Status != StatusPending {
			return nil, notPendingProblem(a)
		}
		if err := approvalSetStatusTx(ctx, tx, a, StatusCancelled, now); err != nil {
			return nil, err
		}
		by := eventActor{id: p.UserID.String(), name: p.Username, via: via}
		if _, err := audit.AppendTx(ctx, tx, by.event("approval.cancelled", a, nil)); err != nil {
			return nil, err
		}
		if err := approvalNotifyTx(ctx, tx, a); err != nil {
			return nil, err
		}
		return approvalGet(ctx, tx, a.ID, "")
	})
}

// change runs fn on request id, locked and at a version ifMatch names (any, if none), in
// one transaction at the policy clock's now.
func (s *Service) change(ctx context.Context, id uuid.UUID, ifMatch etag.IfMatch,
	fn func(ctx context.Context, tx pgx.Tx, a *Approval, now time.Time) (*Approval, error),
) (*Approval, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Approval, error) {
		return s.changeTx(ctx, tx, id, ifMatch, fn)
	})
}

// changeTx is change in the caller's transaction.
func (s *Service) changeTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, ifMatch etag.IfMatch,
	fn func(ctx context.Context, tx pgx.Tx, a *Approval, now time.Time) (*Approval, error),
) (*Approval, error) {
	now := s.policy.now()
	a, err := approvalLockTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := etag.CheckIfMatch(ifMatch, a.Version); err != nil {
		return nil, err
	}
	return fn(ctx, tx, a, now)
}

func notPendingProblem(a *Approval) *problem.Error {
	return refusal(http.StatusConflict, CodeNotPending, fmt.Sprintf("approval %s is %s, not pending", a.ID, a.Status), a)
}

// expireBatch bounds one sweep transaction: 500 rows keep the audit lock
// short; the next sweep takes the rest.
const expireBatch = 500

// ExpireDue marks open requests past their expiry as expired, audits and
// announces each, and returns how many it expired.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (int, error) {
		now := s.policy.now()
		due, err := approvalsDueLockTx(ctx, tx, now, expireBatch)
		if err != nil {
			return 0, err
		}
		for _, a := range due {
			if err := expireTx(ctx, tx, s.emit, a, now, false, systemActor); err != nil {
				return 0, err
			}
		}
		return len(due), nil
	})
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
func (s *Service) List(ctx context.Context, p ListParams) (page.List[*Approval], error) {
	if _, err := s.ExpireDue(ctx); err != nil {
		return page.List[*Approval]{}, err
	}
	rows, err := ApprovalList(ctx, s.db, ListParams{Status: p.Status, Page: p.Page.Ahead()})
	if err != nil {
		return page.List[*Approval]{}, err
	}
	return page.Of(rows, p.Page.Limit), nil
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
