package approvals

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/jackc/pgx/v5"
)

// A decision counts only while its approver is enabled and holds an
// approving role (ADR-0012). When they lose either, their decisions on
// open requests are voided in the same transaction as the change
// (VoidDecisionsTx), and the gate checks again when it consumes, so a
// change made behind the service's back (SQL) is caught at use.
//
// Lock order: the approver's user row, then the requests, in id order.
// Decide takes the deciding user's row (shared) before the request, and
// a user change takes the user's row before the requests they decided,
// so a decision and a change of its approver's authority serialise. The
// gate reads approvers without locking them: a change of authority made
// through the service locks every open request the approver decided, so
// it commits before the gate locks the request (which then sees the
// voided decision) or waits for the gate's commit (and finds the request
// consumed).

// VoidReason says why a decision stopped counting.
type VoidReason string

// The reasons a decision is voided.
const (
	VoidApproverDisabled VoidReason = "approver_disabled"
	VoidApproverDemoted  VoidReason = "approver_demoted"
)

// authority is an approver's standing as it was read.
type authority struct {
	role     identity.Role
	disabled bool
}

// lapse says why a decision by someone of this standing does not count,
// "" when it does.
func (au authority) lapse() VoidReason {
	switch {
	case au.disabled:
		return VoidApproverDisabled
	case !au.role.CanDecide():
		return VoidApproverDemoted
	}
	return ""
}

// Lapse says why decisions of u no longer count: VoidApproverDisabled,
// VoidApproverDemoted, or "" while u may decide.
func Lapse(u *identity.User) VoidReason {
	return authority{role: u.Role, disabled: u.Disabled}.lapse()
}

// Actor is who changes approvals from outside this package (an admin
// changing a user), as the audit chain names them.
type Actor struct {
	ID, Name string
	Via      capability.Path
}

// VoidDecisionsTx voids, in the caller's transaction, every decision
// that approver made and that still counts on an open, unexpired request,
// for reason (a lapsed request is history and is never reopened): each request loses the approval, an approved one returns to
// pending with a new pending window (PendingTTL from now: the approvers
// left need the time a request is given, and it is the requester's loss
// of an approval, not their delay), and each change is audited as
// approval.decisions_voided and announced. The caller has locked and
// changed the approver's user row. It returns the requests changed.
func (s *Service) VoidDecisionsTx(ctx context.Context, tx pgx.Tx, by Actor, approver uuid.UUID, reason VoidReason) ([]uuid.UUID, error) {
	now := s.policy.now()
	open, err := approvalsDecidedByLockTx(ctx, tx, approver, now)
	if err != nil {
		return nil, err
	}
	if err := decisionsLoad(ctx, tx, open); err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, 0, len(open))
	actor := eventActor{id: by.ID, name: by.Name, via: by.Via}
	for _, a := range open {
		if err := voidTx(ctx, tx, a, map[uuid.UUID]VoidReason{approver: reason}, actor, now, s.policy.PendingTTL); err != nil {
			return nil, err
		}
		ids = append(ids, a.ID)
	}
	return ids, nil
}

// lapsed returns the approvers of a's counting approvals who may no
// longer decide, and why.
func lapsed(a *Approval) map[uuid.UUID]VoidReason {
	var out map[uuid.UUID]VoidReason
	for _, d := range a.Decisions {
		if !d.Counts || d.Decision != DecisionApprove {
			continue
		}
		r := d.approver.lapse()
		if r == "" && d.delegator != nil {
			// A decision made on a delegator's authority alone rests on
			// it as on the delegate's own (ADR-0022 §7).
			r = d.delegator.lapse()
		}
		if r != "" {
			if out == nil {
				out = map[uuid.UUID]VoidReason{}
			}
			out[d.Approver.ID] = r
		}
	}
	return out
}

// voided returns how many of a's decisions no longer count.
func (a *Approval) voided() int {
	n := 0
	for _, d := range a.Decisions {
		if !d.Counts {
			n++
		}
	}
	return n
}

// voidTx voids the counting decisions of the approvers in voids on the
// locked open request a (decisions loaded), moves an approved request
// short of its count back to pending until now+pendingTTL, audits and
// announces it; a is updated to match.
func voidTx(ctx context.Context, tx pgx.Tx, a *Approval, voids map[uuid.UUID]VoidReason, by eventActor, now time.Time, pendingTTL time.Duration) error {
	var detail []map[string]any
	a.Approvals = 0
	for i := range a.Decisions {
		d := &a.Decisions[i]
		r, ok := voids[d.Approver.ID]
		if !ok && d.OnBehalfOf != nil {
			r, ok = voids[d.OnBehalfOf.ID]
		}
		if ok && d.Counts {
			if err := decisionVoidTx(ctx, tx, a.ID, d.Approver.ID, r, now); err != nil {
				return err
			}
			d.Counts, d.VoidedAt, d.VoidReason = false, &now, r
			detail = append(detail, map[string]any{"approver_id": d.Approver.ID.String(), "approver": d.Approver.Username, "reason": string(r)})
		}
		if d.Counts && d.Decision == DecisionApprove {
			a.Approvals++
		}
	}
	from := a.Status
	if a.Status == StatusApproved && a.Approvals < a.RequiredApprovals {
		if err := approvalReopenTx(ctx, tx, a.ID, now, now.Add(pendingTTL)); err != nil {
			return err
		}
		a.Status, a.DecidedAt, a.ExpiresAt = StatusPending, nil, now.Add(pendingTTL)
	} else if err := approvalTouchTx(ctx, tx, a.ID, now); err != nil {
		return err
	}
	a.UpdatedAt, a.Version = now, a.Version+1
	if _, err := audit.AppendTx(ctx, tx, by.event("approval.decisions_voided", a, map[string]any{
		"from": string(from), "voided": detail, "approvals": a.Approvals, "required_approvals": a.RequiredApprovals,
		"expires_at": a.ExpiresAt.Format(time.RFC3339Nano),
	})); err != nil {
		return err
	}
	return approvalNotifyTx(ctx, tx, a)
}
