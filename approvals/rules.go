package approvals

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// key is the rule's threshold as its unit states it, which with the
// capability and currency names its tier.
func (r Rule) key() int64 {
	if r.MinAmount != nil {
		return *r.MinAmount
	}
	return *r.MinAmountMajor
}

// RuleInput is a tier to set: calls of Capability in Currency (or
// AnyCurrency) at or above the threshold need Approvers approvers. A rule
// for one currency states its threshold in minor units (MinAmount), a rule
// for any currency in major units (MinAmountMajor).
type RuleInput struct {
	Capability     string `json:"capability"`
	Currency       string `json:"currency"`
	MinAmount      *int64 `json:"min_amount"`
	MinAmountMajor *int64 `json:"min_amount_major"`
	Approvers      int    `json:"approvers"`
	// WindowDays and Scope, both or neither, make the tier compare the
	// sum of the capability's effects in Scope over the last WindowDays
	// days plus the call (ADR-0022 §3).
	WindowDays *int    `json:"window_days"`
	Scope      *string `json:"scope"`
	// Deciders narrows who may decide (nil: every approver and admin);
	// Escalation widens it again after a delay.
	Deciders   *AudienceInput   `json:"deciders"`
	Escalation *EscalationInput `json:"escalation"`
}

// checkRule validates in, naming every field that is wrong.
func (s *Service) checkRule(in RuleInput) (Rule, error) {
	var bad []problem.FieldError
	fail := func(field, format string, args ...any) {
		bad = append(bad, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	caps := slices.Sorted(slices.Values(append(slices.Clone(s.policy.Capabilities), s.policy.Governed...)))
	switch {
	case in.Capability == "":
		fail("capability", "is required: one of %s", strings.Join(caps, ", "))
	case !slices.Contains(caps, in.Capability):
		fail("capability", "must be a capability the approval policy governs: one of %s", strings.Join(caps, ", "))
	}
	anyCurrency, known := in.Currency == AnyCurrency, money.Valid(in.Currency)
	if !anyCurrency && !known {
		fail("currency", "must be an ISO 4217 code such as EUR, or %s for every currency without rules of its own", AnyCurrency)
	}
	threshold := func(field string, v *int64, unit string) {
		switch {
		case v == nil:
			fail(field, "is required: the amount, in %s, at or above which the rule applies", unit)
		case *v < 0 || *v > MaxThreshold:
			fail(field, "must be from 0 to %d", MaxThreshold)
		}
	}
	switch {
	case anyCurrency:
		threshold("min_amount_major", in.MinAmountMajor, "major units of the invoice's currency")
		if in.MinAmount != nil {
			fail("min_amount", "is for a rule of one currency; a rule for any currency states its threshold in major units (min_amount_major), since currencies differ in minor units")
		}
	case known:
		threshold("min_amount", in.MinAmount, "minor units of "+in.Currency)
		if in.MinAmountMajor != nil {
			fail("min_amount_major", "is for a rule of any currency (%s); a rule for %s states its threshold in its minor units (min_amount)", AnyCurrency, in.Currency)
		}
	}
	switch floor := s.policy.floor(in.Capability); {
	case in.Approvers < floor || in.Approvers > 10:
		fail("approvers", "must be from %d to 10", floor)
		if floor == 1 && in.Approvers == 0 && in.Capability != "" {
			bad[len(bad)-1].Message += fmt.Sprintf(": %s is consequential and never takes effect without an approver", in.Capability)
		}
	}
	var scope *Scope
	switch {
	case in.WindowDays != nil && (*in.WindowDays < 1 || *in.WindowDays > MaxWindowDays):
		fail("window_days", "must be from 1 to %d: the days whose effects the tier adds up", MaxWindowDays)
	case in.WindowDays != nil && in.Scope == nil:
		fail("scope", "is required with window_days: requester, customer or requester_customer, whose effects the window adds up")
	}
	if in.Scope != nil {
		sc, err := ParseScope(*in.Scope)
		switch {
		case err != nil:
			fail("scope", "must be requester, customer or requester_customer")
		case in.WindowDays == nil:
			fail("window_days", "is required with scope: the days (1 to %d) whose effects the tier adds up", MaxWindowDays)
		default:
			scope = &sc
		}
	}
	checkDeciders(in, s.policy.PendingTTL, fail)
	if len(bad) > 0 {
		return Rule{}, problem.Validation(bad...)
	}
	return Rule{ID: uuid.Must(uuid.NewV7()), Capability: in.Capability, Currency: in.Currency,
		MinAmount: in.MinAmount, MinAmountMajor: in.MinAmountMajor, Approvers: in.Approvers,
		WindowDays: in.WindowDays, Scope: scope}, nil
}

// PolicyGet returns the policy at version (0: the one in force).
func (s *Service) PolicyGet(ctx context.Context, version int64) (*RuleSet, error) {
	if version < 0 {
		return nil, problem.Invalid("version", "must be a positive policy version")
	}
	return ruleSetGet(ctx, s.db, version)
}

// PolicySet puts the tier that in describes in force as admin p, arriving
// by via: it replaces the tier of the same capability, currency and
// threshold, if there is one, else adds a tier. Setting what is in force
// already changes nothing. The policy must be at a version ifMatch names,
// if it names any (412 VERSION_MISMATCH otherwise).
func (s *Service) PolicySet(ctx context.Context, p identity.Principal, via capability.Path, in RuleInput, ifMatch etag.IfMatch) (*RuleSet, error) {
	r, err := s.checkRule(in)
	if err != nil {
		return nil, err
	}
	return s.policyChange(ctx, p, via, ifMatch, func(ctx context.Context, tx pgx.Tx) (*Rule, *Rule, error) {
		if err := rulesResolve(ctx, tx, &r, in); err != nil {
			return nil, nil, err
		}
		old, found, err := ruleAtGet(ctx, tx, r)
		if err != nil || (found && old.Approvers == r.Approvers && sameDeciders(&old, &r)) {
			return nil, nil, err
		}
		if found {
			return &old, &r, nil
		}
		return nil, &r, nil
	})
}

// PolicyDelete takes rule id out of force as admin p (404 unless it is in
// force); ifMatch is as for PolicySet.
func (s *Service) PolicyDelete(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID, ifMatch etag.IfMatch) (*RuleSet, error) {
	return s.policyChange(ctx, p, via, ifMatch, func(ctx context.Context, tx pgx.Tx) (*Rule, *Rule, error) {
		old, found, err := ruleInForceGet(ctx, tx, id)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			return nil, nil, problem.NotFound("approval rule " + id.String() + " in force")
		}
		return &old, nil, nil
	})
}

// policyChange runs one change of the policy as admin p: under the policy
// lock, at the If-Match version, change says which rule goes (before) and
// which comes (after); neither is no change. A change makes the next
// version, audits it (who, before → after) and raises the open requests
// of the capability that the new version asks more of (the stricter rule
// applies). It returns the policy in force afterwards.
func (s *Service) policyChange(ctx context.Context, p identity.Principal, via capability.Path, ifMatch etag.IfMatch,
	change func(ctx context.Context, tx pgx.Tx) (before, after *Rule, err error),
) (*RuleSet, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*RuleSet, error) {
		// The admin's row first, shared until commit: users before the
		// requests raiseOpenTx locks (the lock order of live.go), and an
		// admin disabled or demoted while this runs changes nothing.
		u, err := identity.UserAdminLockTx(ctx, tx, p.UserID, "change the approval policy")
		if err != nil {
			return nil, err
		}
		current, err := policyLockTx(ctx, tx)
		if err != nil {
			return nil, err
		}
		if err := etag.CheckIfMatch(ifMatch, current); err != nil {
			return nil, err
		}
		before, after, err := change(ctx, tx)
		if err != nil {
			return nil, err
		}
		if before == nil && after == nil {
			return ruleSetGet(ctx, tx, current)
		}
		now, version := s.policy.now(), current+1
		if err := policyVersionInsertTx(ctx, tx, version, u.ID, now); err != nil {
			return nil, err
		}
		capName := ""
		if before != nil {
			capName = before.Capability
			if err := ruleRetireTx(ctx, tx, before.ID, version); err != nil {
				return nil, err
			}
			before.ToVersion = &version
		}
		if after != nil {
			capName, after.FromVersion = after.Capability, version
			if err := ruleInsertTx(ctx, tx, *after); err != nil {
				return nil, err
			}
		}
		set, err := ruleSetGet(ctx, tx, version)
		if err != nil {
			return nil, err
		}
		by := eventActor{id: u.ID.String(), name: u.Username, via: via}
		raised, err := s.raiseOpenTx(ctx, tx, set, capName, now, by)
		if err != nil {
			return nil, err
		}
		action := "set"
		if after == nil {
			action = "delete"
		}
		events := append([]audit.Event{{Type: "approval_policy.changed", ActorID: by.id, Actor: by.name, Via: string(via),
			SubjectType: "approval_policy", SubjectID: fmt.Sprint(version),
			Data: map[string]any{"version": version, "action": action, "before": before, "after": after}}}, raised...)
		for _, ev := range events {
			if _, err := audit.AppendTx(ctx, tx, ev); err != nil {
				return nil, err
			}
		}
		return set, nil
	})
}

// raiseOpenTx applies set to the open, unexpired requests of capName:
// each that set asks more approvers of is raised (raiseTx). Every change
// runs it, a deletion too: without a currency's own tiers the stricter
// any-currency ones may apply. Requests are locked in id order, as every
// transaction that locks several does. It returns the audit events to
// append.
func (s *Service) raiseOpenTx(ctx context.Context, tx pgx.Tx, set *RuleSet, capName string, now time.Time, by eventActor) ([]audit.Event, error) {
	open, err := approvalsOpenLockTx(ctx, tx, capName, now)
	if err != nil {
		return nil, err
	}
	if err := decisionsLoad(ctx, tx, open); err != nil {
		return nil, err
	}
	var events []audit.Event
	for _, a := range open {
		ev, err := raiseTx(ctx, tx, a, set.Required(a.Capability, a.Amount, a.Currency), s.policy.PendingTTL, now, by)
		if err != nil {
			return nil, err
		}
		if ev != nil {
			events = append(events, *ev)
		}
	}
	return events, nil
}

// raiseTx applies the stricter of the locked open request a's requirement
// and req: if req asks more, a records it, and an approved request short
// of it returns to pending, for PendingTTL from now, so that the remaining
// approvers can decide. A looser req changes nothing: a request never
// needs fewer approvers than the rule it was raised under. a's decisions
// must be loaded. It announces a change and returns its audit event (nil:
// no change), for the caller to append last, as audit appends go (they
// hold the chain's lock until COMMIT).
func raiseTx(ctx context.Context, tx pgx.Tx, a *Approval, req Requirement, pendingTTL time.Duration, now time.Time, by eventActor) (*audit.Event, error) {
	if req.Approvers <= a.RequiredApprovals {
		return nil, nil
	}
	from, prev := a.RequiredApprovals, a.Status
	reopen := a.Status == StatusApproved && a.Approvals < req.Approvers
	expiresAt := a.ExpiresAt
	if reopen {
		expiresAt = now.Add(pendingTTL)
	}
	if err := approvalRaiseTx(ctx, tx, a, req, reopen, expiresAt, now); err != nil {
		return nil, err
	}
	data := map[string]any{"from": string(prev), "required_from": from, "required_approvals": req.Approvers,
		"approvals": a.Approvals, "policy_version": req.Version}
	if req.Rule != nil {
		data["rule_id"] = req.Rule.ID.String()
	}
	ev := by.event("approval.requirement_raised", a, data)
	return &ev, approvalNotifyTx(ctx, tx, a)
}

// policyRaisedProblem is APPROVAL_REQUIRED for a request the requirement
// in force (req: a stricter policy, or a window's sum that crossed a tier)
// returned to pending.
func policyRaisedProblem(a *Approval, req Requirement) *problem.Error {
	e := requiredProblem(a)
	why := fmt.Sprintf("policy version %d asks %d approvers", *a.RequiredRaisedBy, a.RequiredApprovals)
	if w := findWindow(req.Windows, req.Rule); req.Rule != nil && w != nil {
		why = fmt.Sprintf("%s %s over the last %d day(s) (%s, this call included, in scope %s) reaches a tier that asks %d approvers",
			a.Capability, money.Display(w.Total(), w.Currency), w.Days, plural(w.Count, "earlier effect"), w.Scope, a.RequiredApprovals)
		e.Extra["windows"] = req.Windows
	}
	e.Detail = fmt.Sprintf("%s needs more approvals: %s and request %s has %d, so it is pending again; call again once it is approved",
		a.Capability, why, a.ID, a.Approvals)
	return e
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
