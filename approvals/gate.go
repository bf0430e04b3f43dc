package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Gate is the transactional approval gate of ADR-0010. It holds no
// connection: it runs in the caller's transaction, after the caller locked
// the target row and its state checks passed.
type Gate struct {
	policy     Policy
	emit       events.Emitter
	allowances Allowances
}

// Allowances draws standing allowances (package allowances) for calls
// that would otherwise wait for an approval.
type Allowances interface {
	// DrawTx draws, in tx and under the allowance's row lock, the
	// in-force allowance covering call on target that expires first and
	// was approved by at least needs approvers (what the call itself
	// would need), recording the draw as invocation inv in the audit
	// chain; nil when none covers it (out of scope, over its caps, too
	// few approvers, or drawn by one of its deciders).
	DrawTx(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target, needs int, inv uuid.UUID, now time.Time) (*capability.AllowanceDraw, error)
}

// UseAllowances makes the gate draw from a before it asks for an approval.
func (g *Gate) UseAllowances(a Allowances) { g.allowances = a }

var _ capability.Gate = (*Gate)(nil)

// NewGate returns a gate applying policy (zero fields take defaults) that
// records approval.requested and approval.expired through emit.
func NewGate(policy Policy, emit events.Emitter) *Gate {
	return &Gate{policy: policy.withDefaults(), emit: emit}
}

var inputHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// AuthorizeTx implements capability.Gate, in the order of ADR-0022 §9.
// It checks the requester's live authority (403 FORBIDDEN, nothing
// written), reads the requirement (the tiers, and the sums of windowed
// tiers under their scope locks), lets a call that needs no approver
// through, and otherwise looks at the latest request for the binding
// (capability, target, effective-input hash) and:
//   - approved, same target version, unexpired: consumes it and returns
//     the Grant (the caller applies the effect and commits), unless the
//     caller is one of its approvers (403 FORBIDDEN, nothing spent) or
//     an approver it counted may no longer decide (their decision is
//     voided; short of its count, the request is pending again and the
//     answer APPROVAL_REQUIRED), or the requirement now asks more than
//     it has (raised, pending again, APPROVAL_REQUIRED);
//   - pending, same version: APPROVAL_REQUIRED with its id (reuse);
//   - open but for an older target version: marks it superseded and
//     answers APPROVAL_STALE; the next call requests anew;
//   - open but past its expiry: marks it expired, APPROVAL_EXPIRED;
//   - denied, same version: APPROVAL_DENIED (asking again for the very
//     content an approver refused needs a changed target);
//   - none, or closed otherwise: a new pending request, APPROVAL_REQUIRED,
//     unless no eligible approver exists (NO_ELIGIBLE_APPROVER, nothing
//     written).
//
// Where the answer would be APPROVAL_REQUIRED (a new request, or one
// still pending), a standing allowance covering the call is drawn instead
// (ADR-0022 §8) and the Grant names it; a pending request it makes moot
// is superseded. An approval made for the exact call is spent before any
// allowance, and a denial stands.
//
// Whatever lets the call through records its effect, which the windows
// count. Refusals that wrote something are wrapped with store.CommitAnd.
func (g *Gate) AuthorizeTx(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target) (capability.Grant, error) {
	if err := checkCall(call, target); err != nil {
		return capability.Grant{}, problem.Internal(err)
	}
	now := g.policy.now()
	if err := requesterLiveTx(ctx, tx, call); err != nil {
		return capability.Grant{}, err
	}
	req, err := g.requirementTx(ctx, tx, call, target, now)
	if err != nil {
		return capability.Grant{}, err
	}
	if req.Approvers == 0 {
		return capability.Grant{}, effectInsertTx(ctx, tx, call, target, now)
	}
	a, found, err := approvalLatestLockTx(ctx, tx, call.Name, target.Type, target.ID, call.InputHash)
	if err != nil {
		return capability.Grant{}, err
	}
	if !found {
		return g.request(ctx, tx, call, target, req, now)
	}
	if a.Target.Version != target.Version {
		if a.Status.Open() {
			return capability.Grant{}, g.supersede(ctx, tx, call, a, target, now)
		}
		return g.request(ctx, tx, call, target, req, now)
	}
	switch a.Status {
	case StatusPending, StatusApproved:
		if !now.Before(a.ExpiresAt) {
			if err := expireTx(ctx, tx, g.emit, a, now, true, callActor(call)); err != nil {
				return capability.Grant{}, err
			}
			return capability.Grant{}, store.CommitAnd(expiredProblem(a))
		}
		if err := decisionsLoad(ctx, tx, []*Approval{a}); err != nil {
			return capability.Grant{}, err
		}
		was := a.Status
		raised, err := g.applyCurrentPolicy(ctx, tx, call, a, req, now)
		if err != nil {
			return capability.Grant{}, err
		}
		// A raised requirement is recorded whatever the answer: a refusal
		// rolling it back would leave the request asking fewer approvers
		// than the rule in force, to be raised again at its next use.
		refuse := func(err error) error {
			if raised {
				return store.CommitAnd(err)
			}
			return err
		}
		if a.Status == StatusPending {
			if grant, ok, err := g.draw(ctx, tx, call, target, a.RequiredApprovals, now, a); err != nil || ok {
				return grant, err
			}
		}
		if was == StatusApproved && a.Status == StatusPending {
			return capability.Grant{}, refuse(policyRaisedProblem(a, req))
		}
		if a.Status == StatusPending {
			return capability.Grant{}, refuse(requiredProblem(a))
		}
		if err := checkNotDecider(call, a); err != nil {
			return capability.Grant{}, refuse(err)
		}
		// Recounted under the row lock: only decisions of approvers who
		// may still decide count (ADR-0012).
		if voids := lapsed(a); voids != nil {
			if err := voidTx(ctx, tx, a, voids, systemActor, now, g.policy.PendingTTL); err != nil {
				return capability.Grant{}, err
			}
			if a.Status != StatusApproved {
				return capability.Grant{}, store.CommitAnd(requiredProblem(a))
			}
		}
		return g.consume(ctx, tx, call, a, target, now)
	case StatusDenied:
		if err := decisionsLoad(ctx, tx, []*Approval{a}); err != nil {
			return capability.Grant{}, err
		}
		return capability.Grant{}, deniedProblem(a)
	case StatusExpired:
		if !a.expiryReported {
			if err := approvalExpiryReportedTx(ctx, tx, a.ID, now); err != nil {
				return capability.Grant{}, err
			}
			return capability.Grant{}, store.CommitAnd(expiredProblem(a))
		}
	}
	// Cancelled, superseded, consumed, or an expiry already reported: the
	// caller asks anew.
	return g.request(ctx, tx, call, target, req, now)
}

// requesterLiveTx refuses a call whose requester is no longer enabled
// with the role the call was authenticated with (ADR-0022 §4). A chat
// run, an MCP session or a token re-checks its credential only every
// 15 s; the requester's row, locked FOR SHARE until COMMIT, makes a
// disabling or demotion either wait for this effect or be seen by it.
func requesterLiveTx(ctx context.Context, tx pgx.Tx, call capability.Call) error {
	u, err := identity.UserLockShareTx(ctx, tx, call.Principal.UserID)
	if err != nil {
		if problem.HasCode(err, problem.CodeNotFound) {
			return problem.Forbidden("your account no longer exists")
		}
		return err
	}
	switch {
	case u.Disabled:
		return problem.Forbidden(fmt.Sprintf("your account (%s) is disabled, so %s cannot take effect for you", u.Username, call.Name))
	case u.Role != call.Principal.Role:
		return problem.Forbidden(fmt.Sprintf("your role changed from %s to %s since you signed in, so %s cannot take effect for you: authenticate again", call.Principal.Role, u.Role, call.Name))
	}
	return nil
}

// requirementTx is what call on target needs now (ADR-0022 §9 step 3):
// the capability's tiers in force, the windowed ones over their sums
// (windowsSumTx takes the scope locks), at least one approver unless the
// capability is a governed bound one.
func (g *Gate) requirementTx(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target, now time.Time) (Requirement, error) {
	set, err := rulesInForceGet(ctx, tx, call.Name, target.Currency)
	if err != nil {
		return Requirement{}, err
	}
	ws := set.windowsOf(call.Name, target.Currency)
	if err := windowsSumTx(ctx, tx, ws, call.Name, call.Principal.UserID, target, now); err != nil {
		return Requirement{}, err
	}
	req := set.RequiredOver(call.Name, target.Amount, target.Currency, g.policy.floor(call.Name), ws)
	if g.policy.JudgedAlsoBy == nil {
		return req, nil
	}
	// A call standing for others' (grant-allowance) needs what the
	// strictest of their tiers asks at its amount, windows aside: it is
	// itself no effect they count.
	for _, other := range g.policy.JudgedAlsoBy(call.Name, call.Input) {
		set, err := rulesInForceGet(ctx, tx, other, target.Currency)
		if err != nil {
			return Requirement{}, err
		}
		if r := set.RequiredOver(other, target.Amount, target.Currency, g.policy.floor(call.Name), nil); r.Approvers > req.Approvers {
			req = r
		}
	}
	return req, nil
}

// draw spends a standing allowance on the call instead of an approval
// of needs approvers, if one covers it (ok false: none does). open is the
// call's pending request, if any: the draw makes it moot, so it is
// superseded and no approver is left to decide it. The effect is
// recorded with the allowance it drew (ADR-0022 §3), so windows count it.
func (g *Gate) draw(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target, needs int, now time.Time, open *Approval) (capability.Grant, bool, error) {
	if g.allowances == nil {
		return capability.Grant{}, false, nil
	}
	inv := uuid.Must(uuid.NewV7())
	d, err := g.allowances.DrawTx(ctx, tx, call, target, needs, inv, now)
	if err != nil || d == nil {
		return capability.Grant{}, false, err
	}
	if _, err := tx.Exec(ctx, effectDrawnSQL, append(effectArgs(call, target, nil, now), d.ID)...); err != nil {
		return capability.Grant{}, false, store.MapError(err, "approval policy effect")
	}
	if open != nil {
		if err := approvalSetStatusTx(ctx, tx, open, StatusSuperseded, now); err != nil {
			return capability.Grant{}, false, err
		}
		if _, err := audit.AppendTx(ctx, tx, callActor(call).event("approval.superseded", open, map[string]any{
			"allowance_id": d.ID.String(), "invocation_id": inv.String(),
		})); err != nil {
			return capability.Grant{}, false, err
		}
		if err := approvalNotifyTx(ctx, tx, open); err != nil {
			return capability.Grant{}, false, err
		}
	}
	return capability.Grant{InvocationID: inv.String(), Allowance: d}, true, nil
}

// effectDrawnSQL is effectInsertSQL for an effect a standing allowance
// let through: its arguments are effectArgs' and the allowance's id.
const effectDrawnSQL = `INSERT INTO policy_effects (id, capability, requester, customer_id, amount, currency, at, target_type, target_id, approval_id, allowance_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// applyCurrentPolicy applies to the locked open request a the stricter
// of the rule it was raised under and the rule in force (ADR-0014), and
// reports whether it raised a's requirement (an approved request short
// of it returns to pending). A policy change raises the open requests
// it sees, under their row locks, so a consume racing it is judged by
// the rule in force when it commits; a request raised while the change
// was committing is not among them, and is raised here when it is used.
// A raised requirement that a's approvals still meet is recorded and
// the caller's transaction goes on to consume.
func (g *Gate) applyCurrentPolicy(ctx context.Context, tx pgx.Tx, call capability.Call, a *Approval, req Requirement, now time.Time) (bool, error) {
	ev, err := raiseTx(ctx, tx, a, req, g.policy.PendingTTL, now, callActor(call))
	if err != nil || ev == nil {
		return false, err
	}
	if _, err := audit.AppendTx(ctx, tx, *ev); err != nil {
		return false, err
	}
	return true, nil
}

// checkNotDecider refuses to spend an approval on a call by one of its
// approvers. Whoever triggers the effect is its requester in substance
// (an admin may join a clerk's pending request and then decide it), and a
// requester never decides: the effect would rest on the caller's own
// decision. The approval stays unspent for someone who did not decide it.
func checkNotDecider(call capability.Call, a *Approval) error {
	for _, d := range a.Decisions {
		if d.Approver.ID == call.Principal.UserID || (d.OnBehalfOf != nil && d.OnBehalfOf.ID == call.Principal.UserID) {
			return refusal(http.StatusForbidden, problem.CodeForbidden, fmt.Sprintf(
				"you decided approval %s, so you cannot be the one to use it: someone who did not decide it (such as its requester %s) must call %s",
				a.ID, a.RequestedBy.Username, a.Capability), a)
		}
	}
	return nil
}

func checkCall(call capability.Call, target capability.Target) error {
	switch {
	case call.Name == "":
		return errors.New("approvals gate: call without a capability name")
	case call.Principal.UserID == uuid.Nil:
		return errors.New("approvals gate: call without a principal")
	case !inputHashRE.MatchString(call.InputHash):
		return fmt.Errorf("approvals gate: input hash %q is not hex SHA-256", call.InputHash)
	case !json.Valid(call.Input):
		return errors.New("approvals gate: input is not JSON")
	case target.Type == "" || target.ID == "":
		return errors.New("approvals gate: target without type or id")
	case len(target.Snapshot) > 0 && !json.Valid(target.Snapshot):
		return errors.New("approvals gate: snapshot is not JSON")
	}
	return nil
}

// eventActor is who caused an audit event and by which path.
type eventActor struct {
	id, name string
	via      capability.Path
}

func (e eventActor) event(typ string, a *Approval, data map[string]any) audit.Event {
	if data == nil {
		data = map[string]any{}
	}
	data["capability"] = a.Capability
	data["target_type"] = a.Target.Type
	data["target_id"] = a.Target.ID
	data["target_version"] = a.Target.Version
	data["status"] = string(a.Status)
	return audit.Event{Type: typ, ActorID: e.id, Actor: e.name, Via: string(e.via), SubjectType: "approval", SubjectID: a.ID.String(), Data: data}
}

// systemActor is the sweep's identity in the audit chain.
var systemActor = eventActor{name: "system", via: capability.PathSystem}

func callActor(call capability.Call) eventActor {
	return eventActor{id: call.Principal.UserID.String(), name: call.Principal.Username, via: call.Via}
}

// requestReason takes an optional "reason" member of the effective input,
// which is what the requester (or the model) said the call is for.
func requestReason(input json.RawMessage) string {
	var v struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(input, &v) // input was validated as JSON; a non-string reason is no reason
	r := strings.TrimSpace(v.Reason)
	if len(r) > 2000 {
		r = r[:2000]
	}
	return r
}

// request draws a standing allowance that covers the call, or else
// creates a pending request for it needing req, unless no eligible
// approver could ever decide it.
func (g *Gate) request(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target, req Requirement, now time.Time) (capability.Grant, error) {
	if grant, ok, err := g.draw(ctx, tx, call, target, req.Approvers, now, nil); err != nil || ok {
		return grant, err
	}
	return capability.Grant{}, g.requestApproval(ctx, tx, call, target, req, now)
}

// requestApproval creates a pending request for the call needing req,
// unless no eligible approver could ever decide it.
func (g *Gate) requestApproval(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target, req Requirement, now time.Time) error {
	required := req.Approvers
	eligible, err := decidersCount(ctx, tx, call.Principal.UserID, req.Rule)
	if err != nil {
		return err
	}
	if eligible < required {
		e := problem.New(http.StatusForbidden, CodeNoEligibleApprover, fmt.Sprintf(
			"%s needs %d approver(s) other than the requester, and only %d enabled approver or admin user(s) other than you exist; ask an admin to add an approver",
			call.Name, required, eligible))
		e.Extra = map[string]any{"required_approvals": required, "eligible_approvers": eligible}
		return e
	}
	snapshot := target.Snapshot
	if len(snapshot) == 0 {
		snapshot = json.RawMessage(`{}`)
	}
	id := uuid.Must(uuid.NewV7())
	if err := approvalInsertTx(ctx, tx, &Approval{
		ID: id, Capability: call.Name, Input: call.Input, InputHash: call.InputHash,
		Target: Target{Type: target.Type, ID: target.ID, Version: target.Version}, Amount: target.Amount, Currency: target.Currency,
		Snapshot: snapshot, RequestedBy: UserRef{ID: call.Principal.UserID}, RequestedVia: call.Via, Reason: requestReason(call.Input),
		CreatedAt: now, ExpiresAt: now.Add(g.policy.PendingTTL),
	}, req); err != nil {
		return err
	}
	a, err := approvalGet(ctx, tx, id, "")
	if err != nil {
		return err
	}
	if err := g.emit.EmitTx(ctx, tx, events.New(events.ApprovalRequested, now, a)); err != nil {
		return err
	}
	if _, err := audit.AppendTx(ctx, tx, callActor(call).event("approval.requested", a, map[string]any{
		"input_hash": a.InputHash, "amount": a.Amount, "currency": a.Currency, "required_approvals": required,
		"policy_version": req.Version, "rule_id": a.Policy.RuleID,
	})); err != nil {
		return err
	}
	if err := approvalNotifyTx(ctx, tx, a); err != nil {
		return err
	}
	return store.CommitAnd(requiredProblem(a))
}

// supersede closes an open request whose target moved on.
func (g *Gate) supersede(ctx context.Context, tx pgx.Tx, call capability.Call, a *Approval, target capability.Target, now time.Time) error {
	if err := approvalSetStatusTx(ctx, tx, a, StatusSuperseded, now); err != nil {
		return err
	}
	if _, err := audit.AppendTx(ctx, tx, callActor(call).event("approval.superseded", a, map[string]any{
		"current_target_version": target.Version,
	})); err != nil {
		return err
	}
	if err := approvalNotifyTx(ctx, tx, a); err != nil {
		return err
	}
	return store.CommitAnd(refusal(http.StatusConflict, CodeApprovalStale, fmt.Sprintf(
		"approval %s was for version %d of %s %s, which is now at version %d: the approver decided on other content; the request is superseded, call again to request a new approval",
		a.ID, a.Target.Version, a.Target.Type, a.Target.ID, target.Version), a))
}

// consume spends an approved request on this invocation and records the
// effect it lets through (ADR-0022 §3). The audit append
// (which takes the chain's global lock until commit) comes last, so the
// serialised part of an issue is as short as it can be.
func (g *Gate) consume(ctx context.Context, tx pgx.Tx, call capability.Call, a *Approval, target capability.Target, now time.Time) (capability.Grant, error) {
	inv := uuid.Must(uuid.NewV7())
	if err := approvalConsumeTx(ctx, tx, a, inv, effectArgs(call, target, &a.ID, now), now); err != nil {
		return capability.Grant{}, err
	}
	if _, err := audit.AppendTx(ctx, tx, callActor(call).event("approval.consumed", a, map[string]any{
		"invocation_id": inv.String(), "input_hash": a.InputHash,
	})); err != nil {
		return capability.Grant{}, err
	}
	return capability.Grant{ApprovalID: a.ID.String(), InvocationID: inv.String()}, nil
}

// expireTx marks a locked open request expired, records the event, audits
// and announces it; reported says the caller is answering APPROVAL_EXPIRED
// right now.
func expireTx(ctx context.Context, tx pgx.Tx, emit events.Emitter, a *Approval, now time.Time, reported bool, by eventActor) error {
	prev := a.Status
	if err := approvalExpireTx(ctx, tx, a, now, reported); err != nil {
		return err
	}
	if err := emit.EmitTx(ctx, tx, events.New(events.ApprovalExpired, now, a)); err != nil {
		return err
	}
	if _, err := audit.AppendTx(ctx, tx, by.event("approval.expired", a, map[string]any{
		"from": string(prev), "expires_at": a.ExpiresAt.Format(time.RFC3339Nano),
	})); err != nil {
		return err
	}
	return approvalNotifyTx(ctx, tx, a)
}

func expiredProblem(a *Approval) *problem.Error {
	return refusal(http.StatusForbidden, CodeApprovalExpired, fmt.Sprintf(
		"approval %s expired at %s; call again to request a new approval", a.ID, a.ExpiresAt.Format(time.RFC3339)), a)
}

func deniedProblem(a *Approval) *problem.Error {
	detail := fmt.Sprintf("approval %s was denied", a.ID)
	for _, d := range a.Decisions {
		if d.Decision == DecisionDeny {
			detail += fmt.Sprintf(" by %s: %s", d.Approver.Username, d.Reason)
			break
		}
	}
	return refusal(http.StatusForbidden, CodeApprovalDenied, detail+"; change the "+a.Target.Type+" to request again", a)
}
