package approvals_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// escalating puts in force, for issue-invoice in EUR from 0, a tier of
// approvers that appr1 decides, escalating to appr2 after 24 h.
func (b *bundle) escalating(t *testing.T, approvers int) {
	t.Helper()
	zero := int64(0)
	set, err := b.svc.PolicySet(b.ctx, b.admin, capability.PathCLI, approvals.RuleInput{
		Capability: "issue-invoice", Currency: "EUR", MinAmount: &zero, Approvers: approvers,
		Deciders:   &approvals.AudienceInput{Users: []string{"appr1"}},
		Escalation: &approvals.EscalationInput{After: "24h", Users: []string{"appr2"}}}, etag.IfMatch{})
	require.NoError(t, err)
	r := ruleFor(t, set, "issue-invoice", "EUR", 0)
	require.Equal(t, "appr1", r.Deciders.Users[0].Username)
	require.Equal(t, approvals.Duration(24*time.Hour), r.Escalation.After)
}

// Done when: escalation on a fake clock. Until 24 h have passed the
// escalation's audience may not decide and the job escalates nothing; at
// 24 h the job escalates the request once (audited, as approval.escalated
// by the system) and appr2 may decide. The number of approvals needed is
// the same before and after.
func TestEscalationAddsDecidersAfterItsDelayNeverLowersTheQuorum(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.escalating(t, 2)
	b.target(t, "inv", 100)
	id := b.required(t, call(t, "issue-invoice", b.clerk, "inv"), "inv")
	a := b.get(t, id)
	require.Equal(t, b.clock.Now().UTC().Add(24*time.Hour), a.Escalation.At)
	require.Nil(t, a.Escalation.EscalatedAt)
	require.Equal(t, 2, a.RequiredApprovals)

	b.clock.Advance(24*time.Hour - time.Microsecond)
	n, err := b.svc.EscalateDue(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = b.yes(b.appr2, id)
	refused(t, err, http.StatusForbidden, problem.CodeForbidden)
	_, err = b.yes(b.admin, id)
	refused(t, err, http.StatusForbidden, problem.CodeForbidden)

	b.clock.Advance(time.Microsecond)
	n, err = b.svc.EscalateDue(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = b.svc.EscalateDue(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "once")
	a = b.get(t, id)
	require.Equal(t, b.clock.Now().UTC(), *a.Escalation.EscalatedAt)
	require.Equal(t, 2, a.RequiredApprovals)

	a, err = b.yes(b.appr2, id)
	require.NoError(t, err)
	require.Equal(t, approvals.StatusPending, a.Status, "one of two")
	_, err = b.yes(b.admin, id)
	refused(t, err, http.StatusForbidden, problem.CodeForbidden)
	a, err = b.yes(b.appr1, id)
	require.NoError(t, err)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.escalated' AND subject_id = $1 AND event->>'actor' = 'system'`, id))
	b.verify(t)
}

// A decision that finds the escalation due escalates the request itself,
// once, whether or not the job has run.
func TestDecisionEscalatesADueRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.escalating(t, 1)
	b.target(t, "inv", 100)
	id := b.required(t, call(t, "issue-invoice", b.clerk, "inv"), "inv")
	b.clock.Advance(24 * time.Hour)
	a, err := b.yes(b.appr2, id)
	require.NoError(t, err)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.NotNil(t, a.Escalation.EscalatedAt)
	n, err := b.svc.EscalateDue(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.escalated'`))
}

// A tier whose deciders and escalation together are fewer than it needs
// is refused NO_ELIGIBLE_APPROVER; the escalation's audience counts.
func TestDecidersCountTowardEligibleApprovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.restrict(t, 2, "appr1")
	b.target(t, "inv", 100)
	_, err := b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, "inv"), "inv")
	refused(t, err, http.StatusForbidden, approvals.CodeNoEligibleApprover)
	require.Zero(t, b.count(t, `SELECT count(*) FROM approval_requests`))
	b.escalating(t, 2)
	b.required(t, call(t, "issue-invoice", b.clerk, "inv"), "inv")
}

// Bad deciders and escalations are 422 naming the field, and change no
// policy.
func TestPolicyDecidersBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gone := user(t, b.ctx, b.db, "gone", identity.RoleApprover)
	require.NoError(t, identity.UserSetDisabled(b.ctx, b.db, gone.UserID, true))
	before, err := b.svc.PolicyGet(b.ctx, 0)
	require.NoError(t, err)
	zero := int64(0)
	for _, c := range []struct {
		name  string
		d     *approvals.AudienceInput
		e     *approvals.EscalationInput
		field string
	}{
		{"deciders naming nobody", &approvals.AudienceInput{}, nil, "deciders"},
		{"a clerk as decider", &approvals.AudienceInput{Users: []string{"clerk"}}, nil, "deciders.users"},
		{"a disabled decider", &approvals.AudienceInput{Users: []string{"gone"}}, nil, "deciders.users"},
		{"no such user", &approvals.AudienceInput{Users: []string{"nobody"}}, nil, "deciders.users"},
		{"a clerk role", &approvals.AudienceInput{Role: "clerk"}, nil, "deciders.role"},
		{"escalation without deciders", nil, &approvals.EscalationInput{After: "1h", Role: "admin"}, "escalation"},
		{"escalation never due", &approvals.AudienceInput{Role: "admin"}, &approvals.EscalationInput{After: "72h", Role: "approver"}, "escalation.after"},
		{"escalation after 0", &approvals.AudienceInput{Role: "admin"}, &approvals.EscalationInput{After: "0s", Role: "approver"}, "escalation.after"},
		{"escalation to no one", &approvals.AudienceInput{Role: "admin"}, &approvals.EscalationInput{After: "1h"}, "escalation"},
		{"escalation to a clerk", &approvals.AudienceInput{Role: "admin"}, &approvals.EscalationInput{After: "1h", Users: []string{"clerk2"}}, "escalation.users"},
	} {
		_, err := b.svc.PolicySet(b.ctx, b.admin, capability.PathCLI, approvals.RuleInput{
			Capability: "issue-invoice", Currency: "EUR", MinAmount: &zero, Approvers: 1, Deciders: c.d, Escalation: c.e}, etag.IfMatch{})
		invalid(t, err, c.field)
	}
	after, err := b.svc.PolicyGet(b.ctx, 0)
	require.NoError(t, err)
	require.Equal(t, before.Version, after.Version, "nothing written")
}
