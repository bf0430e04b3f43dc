package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func (b *bundle) targetIn(t *testing.T, id string, amount int64, currency string) {
	t.Helper()
	_, err := b.db.Exec(b.ctx, `INSERT INTO targets (id, amount, currency) VALUES ($1, $2, $3)`, id, amount, currency)
	require.NoError(t, err)
}

// set puts a rule in force as the admin and returns the new policy.
func (b *bundle) set(t *testing.T, capName, currency string, minAmount, minMajor *int64, approvers int) *approvals.RuleSet {
	t.Helper()
	set, err := b.svc.PolicySet(b.ctx, b.admin, capability.PathCLI, approvals.RuleInput{
		Capability: capName, Currency: currency, MinAmount: minAmount, MinAmountMajor: minMajor, Approvers: approvers}, etag.IfMatch{})
	require.NoError(t, err)
	return set
}

func (b *bundle) get(t *testing.T, id string) *approvals.Approval {
	t.Helper()
	a, err := b.svc.Get(b.ctx, uuid.MustParse(id))
	require.NoError(t, err)
	return a
}

// ruleFor finds the rule of set for capability, currency and threshold.
func ruleFor(t *testing.T, set *approvals.RuleSet, capName, currency string, threshold int64) approvals.Rule {
	t.Helper()
	for _, r := range set.Rules {
		if r.Capability == capName && r.Currency == currency && ((r.MinAmount != nil && *r.MinAmount == threshold) || (r.MinAmountMajor != nil && *r.MinAmountMajor == threshold)) {
			return r
		}
	}
	t.Fatalf("no rule %s %s %d in %+v", capName, currency, threshold, set.Rules)
	return approvals.Rule{}
}

// Done-when: ¥1,000,000 and €10,000 thresholds side by side, each currency
// by its own rule, at and just below each boundary. Under the seed alone
// ¥10,000 (about €60) needed two approvers.
func TestPolicyYenAndEuroThresholdsSideBySide(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.targetIn(t, "jpy-small", 10_000, "JPY")
	id := b.required(t, call(t, "issue-invoice", b.clerk, "jpy-small"), "jpy-small")
	require.Equal(t, 2, b.get(t, id).RequiredApprovals, "the currency-blind seed: ¥10,000 needs a quorum")

	b.set(t, "issue-invoice", "JPY", minor(1_000_000), nil, 2)
	set := b.set(t, "issue-invoice", "EUR", minor(1_000_000), nil, 2)
	require.EqualValues(t, 3, set.Version)
	jpy, eur := ruleFor(t, set, "issue-invoice", "JPY", 1_000_000), ruleFor(t, set, "issue-invoice", "EUR", 1_000_000)
	seed := ruleFor(t, set, "issue-invoice", approvals.AnyCurrency, 10_000)
	for _, tc := range []struct {
		target   string
		amount   int64
		currency string
		want     int
		rule     *uuid.UUID
	}{
		{"jpy-below", 999_999, "JPY", 1, nil},
		{"jpy-at", 1_000_000, "JPY", 2, &jpy.ID},
		{"jpy-10k", 10_000, "JPY", 1, nil},
		{"eur-below", 999_999, "EUR", 1, nil},
		{"eur-at", 1_000_000, "EUR", 2, &eur.ID},
		{"usd-below", 999_999, "USD", 1, nil},
		{"usd-at", 1_000_000, "USD", 2, &seed.ID},
	} {
		b.targetIn(t, tc.target, tc.amount, tc.currency)
		a := b.get(t, b.required(t, call(t, "issue-invoice", b.clerk, tc.target), tc.target))
		require.Equal(t, tc.want, a.RequiredApprovals, tc.target)
		require.Equal(t, &approvals.PolicyRef{Version: 3, RuleID: tc.rule, RequiredApprovals: tc.want}, a.Policy, tc.target)
		require.Nil(t, a.RequiredRaisedBy)
		b.approve(t, b.appr1, a.ID.String())
		_, err := b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, tc.target), tc.target)
		if tc.want == 1 {
			require.NoError(t, err, tc.target)
			continue
		}
		refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired)
		b.approve(t, b.appr2, a.ID.String())
		_, err = b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, tc.target), tc.target)
		require.NoError(t, err, tc.target)
	}
	b.verify(t)
}

// Each change makes the next version and is audited (who, before →
// after); a rule is retired, never edited, so an earlier version reads
// back as it was. Setting what is in force changes nothing.
func TestPolicyChangesAreVersionedAndAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seed, err := b.svc.PolicyGet(b.ctx, 0)
	require.NoError(t, err)

	v2 := b.set(t, "issue-invoice", "EUR", minor(1_000_000), nil, 2)
	require.EqualValues(t, 2, v2.Version)
	require.Equal(t, "admin", v2.ChangedBy.Username)
	require.Equal(t, b.clock.Now(), v2.ChangedAt)
	require.Len(t, v2.Rules, 5, "the seeds for invoices, credit notes and payments, and EUR's")
	require.Equal(t, v2, b.set(t, "issue-invoice", "EUR", minor(1_000_000), nil, 2), "the same rule again is no change")

	v3 := b.set(t, "issue-invoice", "EUR", minor(1_000_000), nil, 3)
	require.EqualValues(t, 3, v3.Version)
	eur2, eur3 := ruleFor(t, v2, "issue-invoice", "EUR", 1_000_000), ruleFor(t, v3, "issue-invoice", "EUR", 1_000_000)
	require.NotEqual(t, eur2.ID, eur3.ID, "a change puts a new rule in force")
	require.Equal(t, 3, eur3.Approvers)

	v4, err := b.svc.PolicyDelete(b.ctx, b.admin, capability.PathREST, ruleFor(t, seed, "issue-invoice", approvals.AnyCurrency, 10_000).ID, etag.IfMatch{})
	require.NoError(t, err)
	require.EqualValues(t, 4, v4.Version)
	require.Equal(t, []approvals.Rule{ruleFor(t, seed, "issue-credit-note", approvals.AnyCurrency, 10_000), eur3,
		ruleFor(t, seed, "mark-invoice-paid", approvals.AnyCurrency, 10_000), ruleFor(t, seed, "record-payment", approvals.AnyCurrency, 10_000)}, v4.Rules)

	// Which rules were in force at each version.
	for v, want := range map[int64][]approvals.Rule{1: seed.Rules, 2: v2.Rules, 3: v3.Rules, 4: v4.Rules} {
		got, err := b.svc.PolicyGet(b.ctx, v)
		require.NoError(t, err)
		for i := range want {
			want[i].ToVersion = got.Rules[i].ToVersion
		}
		require.Equal(t, want, got.Rules, "version %d", v)
	}
	old, err := b.svc.PolicyGet(b.ctx, 2)
	require.NoError(t, err)
	require.EqualValues(t, 3, *ruleFor(t, old, "issue-invoice", "EUR", 1_000_000).ToVersion, "retired by version 3")

	rows, err := b.db.Query(b.ctx, `SELECT event FROM audit_events WHERE event->>'type' = 'approval_policy.changed' ORDER BY seq`)
	require.NoError(t, err)
	events, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	require.Len(t, events, 3)
	var ev struct {
		Actor string `json:"actor"`
		Via   string `json:"via"`
		Data  struct {
			Version int64           `json:"version"`
			Action  string          `json:"action"`
			Before  *approvals.Rule `json:"before"`
			After   *approvals.Rule `json:"after"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(events[1], &ev))
	require.Equal(t, "admin", ev.Actor)
	require.Equal(t, "cli", ev.Via)
	require.EqualValues(t, 3, ev.Data.Version)
	require.Equal(t, "set", ev.Data.Action)
	require.Equal(t, 2, ev.Data.Before.Approvers)
	require.Equal(t, 3, ev.Data.After.Approvers)
	require.NoError(t, json.Unmarshal(events[2], &ev))
	require.Equal(t, "delete", ev.Data.Action)
	require.Nil(t, ev.Data.After)
	require.EqualValues(t, 10_000, *ev.Data.Before.MinAmountMajor)
	b.verify(t)
}

// policyState is what a refused change must leave as it was.
func (b *bundle) policyState(t *testing.T) [3]int {
	t.Helper()
	return [3]int{
		b.count(t, `SELECT max(version)::int FROM approval_policy_versions`),
		b.count(t, `SELECT count(*) FROM approval_policy_rules`),
		b.count(t, `SELECT count(*) FROM audit_events`),
	}
}

func TestPolicyBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	disabled := user(t, b.ctx, b.db, "ex-admin", identity.RoleAdmin)
	require.NoError(t, identity.UserSetDisabled(b.ctx, b.db, disabled.UserID, true))
	good := approvals.RuleInput{Capability: "issue-invoice", Currency: "EUR", MinAmount: minor(1_000_000), Approvers: 2}
	before := b.policyState(t)
	for name, tc := range map[string]struct {
		as     identity.Principal
		in     func(*approvals.RuleInput)
		status int
		code   string
		fields []string
	}{
		"no capability":      {in: func(r *approvals.RuleInput) { r.Capability = "" }, fields: []string{"capability"}},
		"read capability":    {in: func(r *approvals.RuleInput) { r.Capability = "list-invoices" }, fields: []string{"capability"}},
		"unknown capability": {in: func(r *approvals.RuleInput) { r.Capability = "wire-money" }, fields: []string{"capability"}},
		"no currency":        {in: func(r *approvals.RuleInput) { r.Currency = "" }, fields: []string{"currency"}},
		"lower case":         {in: func(r *approvals.RuleInput) { r.Currency = "eur" }, fields: []string{"currency"}},
		"unknown currency":   {in: func(r *approvals.RuleInput) { r.Currency = "XXX" }, fields: []string{"currency"}},
		"no threshold":       {in: func(r *approvals.RuleInput) { r.MinAmount = nil }, fields: []string{"min_amount"}},
		"negative":           {in: func(r *approvals.RuleInput) { r.MinAmount = minor(-1) }, fields: []string{"min_amount"}},
		"beyond 2^53-1":      {in: func(r *approvals.RuleInput) { r.MinAmount = minor(approvals.MaxThreshold + 1) }, fields: []string{"min_amount"}},
		"major for EUR":      {in: func(r *approvals.RuleInput) { r.MinAmountMajor = minor(10_000) }, fields: []string{"min_amount_major"}},
		"minor for any": {in: func(r *approvals.RuleInput) { r.Currency = "*" },
			fields: []string{"min_amount_major", "min_amount"}},
		"negative major": {in: func(r *approvals.RuleInput) { r.Currency, r.MinAmount, r.MinAmountMajor = "*", nil, minor(-5) },
			fields: []string{"min_amount_major"}},
		"no approvers":   {in: func(r *approvals.RuleInput) { r.Approvers = 0 }, fields: []string{"approvers"}},
		"11 approvers":   {in: func(r *approvals.RuleInput) { r.Approvers = 11 }, fields: []string{"approvers"}},
		"all wrong":      {in: func(r *approvals.RuleInput) { *r = approvals.RuleInput{Currency: "EURO", Approvers: -1} }, fields: []string{"capability", "currency", "approvers"}},
		"clerk":          {as: b.clerk, status: http.StatusForbidden, code: problem.CodeForbidden},
		"approver":       {as: b.appr1, status: http.StatusForbidden, code: problem.CodeForbidden},
		"disabled admin": {as: disabled, status: http.StatusForbidden, code: problem.CodeForbidden},
	} {
		in := good
		if tc.in != nil {
			tc.in(&in)
		}
		as := b.admin
		if tc.as.UserID != uuid.Nil {
			as = tc.as
		}
		_, err := b.svc.PolicySet(b.ctx, as, capability.PathREST, in, etag.IfMatch{})
		pe, ok := problem.As(err)
		require.True(t, ok, "%s: %v", name, err)
		if tc.code == "" {
			tc.status, tc.code = http.StatusUnprocessableEntity, problem.CodeValidation
		}
		require.Equal(t, tc.status, pe.Status, name)
		require.Equal(t, tc.code, pe.Code, name)
		var fields []string
		for _, f := range pe.Errors {
			fields = append(fields, f.Field)
			require.NotEmpty(t, f.Message)
		}
		require.Equal(t, tc.fields, fields, name)
		require.Equal(t, before, b.policyState(t), "%s wrote nothing", name)
	}

	// A stale If-Match, a rule not in force, a version that never was.
	_, err := b.svc.PolicySet(b.ctx, b.admin, capability.PathREST, good, etag.MatchVersion(7))
	require.True(t, problem.HasCode(err, etag.CodeVersionMismatch), "%v", err)
	_, err = b.svc.PolicyDelete(b.ctx, b.admin, capability.PathREST, uuid.Must(uuid.NewV7()), etag.IfMatch{})
	require.True(t, problem.HasCode(err, problem.CodeNotFound), "%v", err)
	_, err = b.svc.PolicyDelete(b.ctx, b.clerk, capability.PathREST, uuid.Must(uuid.NewV7()), etag.IfMatch{})
	require.True(t, problem.HasCode(err, problem.CodeForbidden), "%v", err)
	_, err = b.svc.PolicyGet(b.ctx, 99)
	require.True(t, problem.HasCode(err, problem.CodeNotFound), "%v", err)
	require.Equal(t, before, b.policyState(t))

	// A retired rule is not in force: deleting it again is 404.
	v2 := b.set(t, "issue-invoice", "EUR", minor(1_000_000), nil, 2)
	eur := ruleFor(t, v2, "issue-invoice", "EUR", 1_000_000)
	_, err = b.svc.PolicyDelete(b.ctx, b.admin, capability.PathREST, eur.ID, etag.MatchVersion(2))
	require.NoError(t, err)
	_, err = b.svc.PolicyDelete(b.ctx, b.admin, capability.PathREST, eur.ID, etag.IfMatch{})
	require.True(t, problem.HasCode(err, problem.CodeNotFound), "%v", err)
}

// A tier is refused when raised unless enough deciders other than the
// requester exist for its count.
func TestPolicyTierNeedsEnoughEligibleApprovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.set(t, "issue-invoice", "EUR", minor(10_000_000), nil, 3)
	b.target(t, "huge", 10_000_000)
	// appr1, appr2 and admin: three deciders besides the clerk.
	a := b.get(t, b.required(t, call(t, "issue-invoice", b.clerk, "huge"), "huge"))
	require.Equal(t, 3, a.RequiredApprovals)
	// Only two besides the admin.
	b.target(t, "huge2", 10_000_000)
	before := b.count(t, `SELECT count(*) FROM approval_requests`)
	_, err := b.invoke(b.ctx, call(t, "issue-invoice", b.admin, "huge2"), "huge2")
	refused(t, err, http.StatusForbidden, approvals.CodeNoEligibleApprover)
	require.Equal(t, before, b.count(t, `SELECT count(*) FROM approval_requests`), "nothing left pending")
}

// Done-when, tightening: an approval under the old rule returns to pending
// when a stricter rule comes into force, and answers APPROVAL_REQUIRED
// with the remaining count until a second approver decides.
func TestPolicyTighteningReturnsAnApprovalToPending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv", 500_000) // €5,000: one approver under the seed
	c := call(t, "issue-invoice", b.clerk, "inv")
	id := b.required(t, c, "inv")
	require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr1, id).Status)

	b.clock.Advance(3600e9)
	set := b.set(t, "issue-invoice", "EUR", minor(100_000), nil, 2)
	a := b.get(t, id)
	require.Equal(t, approvals.StatusPending, a.Status, "the inbox shows it waiting again")
	require.Equal(t, 1, a.Approvals)
	require.Equal(t, 2, a.RequiredApprovals)
	require.Equal(t, &set.Version, a.RequiredRaisedBy)
	require.Equal(t, &approvals.PolicyRef{Version: 1, RequiredApprovals: 1}, a.Policy, "what it was raised under stays recorded")
	require.Nil(t, a.DecidedAt)
	require.Equal(t, b.clock.Now().Add(approvals.DefaultPendingTTL), a.ExpiresAt, "the remaining approvers get a pending window")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE event->>'type' = 'approval.requirement_raised'`))

	_, err := b.invoke(b.ctx, c, "inv")
	pe, ok := problem.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code)
	require.Equal(t, 1, pe.Extra["approvals"])
	require.Equal(t, 2, pe.Extra["required_approvals"])
	require.Equal(t, "draft", b.targetStatus(t, "inv"))

	require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr2, id).Status)
	g, err := b.invoke(b.ctx, c, "inv")
	require.NoError(t, err)
	require.Equal(t, id, g.ApprovalID)
	b.verify(t)
}

// Done-when, loosening: a request keeps what it was raised under; a rule
// that asks fewer applies to new requests only.
func TestPolicyLooseningKeepsTheRecordedRequirement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "big", 1_000_000) // €10,000: two under the seed
	c := call(t, "issue-invoice", b.clerk, "big")
	id := b.required(t, c, "big")
	seed, err := b.svc.PolicyGet(b.ctx, 0)
	require.NoError(t, err)
	_, err = b.svc.PolicyDelete(b.ctx, b.admin, capability.PathREST, seed.Rules[0].ID, etag.IfMatch{})
	require.NoError(t, err)
	b.set(t, "issue-invoice", "EUR", minor(5_000_000), nil, 2)

	a := b.approve(t, b.appr1, id)
	require.Equal(t, approvals.StatusPending, a.Status, "still two approvers")
	require.Equal(t, 2, a.RequiredApprovals)
	require.Nil(t, a.RequiredRaisedBy)
	_, err = b.invoke(b.ctx, c, "big")
	refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr2, id).Status)
	_, err = b.invoke(b.ctx, c, "big")
	require.NoError(t, err)

	b.target(t, "big2", 1_000_000)
	require.Equal(t, 1, b.get(t, b.required(t, call(t, "issue-invoice", b.clerk, "big2"), "big2")).RequiredApprovals,
		"a new request follows the looser rule")
}

// A request raised while a stricter rule was committing escapes the
// change's own raising (it was not yet visible); the gate applies the
// stricter rule at use.
func TestPolicyStricterRuleAppliesAtUseToARequestRaisedDuringTheChange(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.target(t, "inv", 500_000)
	c := call(t, "issue-invoice", b.clerk, "inv")
	id, set := b.requestDuringChange(t, c, "inv")

	a := b.get(t, id)
	require.Equal(t, 1, a.RequiredApprovals, "raised under version 1")
	require.EqualValues(t, 1, a.Policy.Version)
	require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr1, id).Status)

	_, err := b.invoke(b.ctx, c, "inv")
	pe, ok := problem.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code)
	require.Contains(t, pe.Detail, fmt.Sprintf("policy version %d asks 2 approvers", set.Version))
	require.Equal(t, "draft", b.targetStatus(t, "inv"))
	a = b.get(t, id)
	require.Equal(t, approvals.StatusPending, a.Status)
	require.Equal(t, 2, a.RequiredApprovals)
	require.Equal(t, &set.Version, a.RequiredRaisedBy)

	b.approve(t, b.appr2, id)
	_, err = b.invoke(b.ctx, c, "inv")
	require.NoError(t, err)
	b.verify(t)
}

// A pending request asked again after a stricter rule escaped the
// change: the gate's refusal records the raised requirement (committed
// with the refusal, not rolled back with it), so the inbox shows what the
// request needs and one approval no longer approves it.
func TestPolicyStricterRuleRecordedOnAPendingRequestAskedAgain(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.target(t, "inv", 500_000)
	c := call(t, "issue-invoice", b.clerk, "inv")
	id, set := b.requestDuringChange(t, c, "inv")
	require.Equal(t, 1, b.get(t, id).RequiredApprovals, "raised under version 1")

	_, err := b.invoke(b.ctx, c, "inv")
	require.Equal(t, id, refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired))
	pe, _ := problem.As(err)
	require.Equal(t, 2, pe.Extra["required_approvals"])
	a := b.get(t, id)
	require.Equal(t, approvals.StatusPending, a.Status)
	require.Equal(t, 2, a.RequiredApprovals)
	require.Equal(t, &set.Version, a.RequiredRaisedBy)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.requirement_raised' AND subject_id = $1`, id))

	require.Equal(t, approvals.StatusPending, b.approve(t, b.appr1, id).Status, "one of two")
	_, err = b.invoke(b.ctx, c, "inv")
	refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, "draft", b.targetStatus(t, "inv"))
	require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr2, id).Status)
	_, err = b.invoke(b.ctx, c, "inv")
	require.NoError(t, err)
	b.verify(t)
}

// requestDuringChange raises a request for c on target (500,000 minor
// units of EUR) in a transaction that commits while a change to two
// approvers at 100,000 waits for it, so the change cannot see (and raise)
// the request. It returns the request's id and the policy the change made.
func (b *bundle) requestDuringChange(t *testing.T, c capability.Call, target string) (string, *approvals.RuleSet) {
	t.Helper()
	tx, err := b.db.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck
	_, err = b.gate.AuthorizeTx(b.ctx, tx, c, capability.Target{Type: "invoice", ID: target, Version: 1, Amount: 500_000, Currency: "EUR", Snapshot: []byte(`{}`)})
	id := refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired)
	// The change raises the open requests it sees, not this uncommitted
	// one, then waits for the audit chain's lock, which the request's
	// transaction holds until it commits.
	changed := make(chan *approvals.RuleSet, 1)
	go func() {
		set, err := b.svc.PolicySet(context.Background(), b.admin, capability.PathREST,
			approvals.RuleInput{Capability: "issue-invoice", Currency: "EUR", MinAmount: minor(100_000), Approvers: 2}, etag.IfMatch{})
		if err != nil {
			t.Error(err)
		}
		changed <- set
	}()
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()`) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, tx.Commit(b.ctx))
	set := <-changed
	require.NotNil(t, set)
	return id, set
}

// Done-when, concurrency: a tightening races 32 consumes of approvals
// made by one approver. Whichever commits first, no invoice is issued on
// one approval after the stricter rule is in force: the audit chain's
// order is commit order (its lock is held to COMMIT), so every consume
// recorded after the change rests on two approvals; every invoice not
// issued waits, pending, for its second approver.
func TestPolicyChangeRacingConsumes(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	const n = 32
	for i := range n {
		id := fmt.Sprintf("inv-%d", i)
		b.target(t, id, 500_000)
		b.approve(t, b.appr1, b.required(t, call(t, "issue-invoice", b.clerk, id), id))
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, n+1)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			id := fmt.Sprintf("inv-%d", i)
			_, err := b.invoke(context.Background(), call(t, "issue-invoice", b.clerk, id), id)
			errs <- err
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		_, err := b.svc.PolicySet(context.Background(), b.admin, capability.PathREST,
			approvals.RuleInput{Capability: "issue-invoice", Currency: "EUR", MinAmount: minor(100_000), Approvers: 2}, etag.IfMatch{})
		errs <- err
	}()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			require.True(t, problem.HasCode(err, approvals.CodeApprovalRequired), "%v", err)
		}
	}
	issued := b.count(t, `SELECT count(*) FROM targets WHERE status = 'issued'`)
	waiting := b.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'pending' AND required_approvals = 2 AND required_raised_version = 2`)
	require.Equal(t, n, issued+waiting, "each invoice issued before the change or waiting after it")
	require.Zero(t, b.count(t, `
		SELECT count(*) FROM audit_events e
		WHERE e.event->>'type' = 'approval.consumed'
		  AND e.seq > (SELECT seq FROM audit_events WHERE event->>'type' = 'approval_policy.changed')
		  AND (SELECT count(*) FROM approval_decisions d WHERE d.request_id = (e.event->>'subject_id')::uuid) < 2`),
		"no consume after the change rests on one approval")
	b.verify(t)
}

// Admins changing the policy at once make one version each, in sequence.
func TestConcurrentPolicyChangesMakeDistinctVersions(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	const n = 8
	var wg sync.WaitGroup
	versions := make(chan int64, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			set, err := b.svc.PolicySet(context.Background(), b.admin, capability.PathREST,
				approvals.RuleInput{Capability: "issue-invoice", Currency: "EUR", MinAmount: minor(int64(i+1) * 100_000), Approvers: 2}, etag.IfMatch{})
			if err != nil {
				t.Error(err)
				return
			}
			versions <- set.Version
		}()
	}
	wg.Wait()
	close(versions)
	seen := map[int64]bool{}
	for v := range versions {
		require.False(t, seen[v], "version %d made twice", v)
		seen[v] = true
	}
	require.Len(t, seen, n)
	for v := int64(2); v <= n+1; v++ {
		require.True(t, seen[v], "version %d", v)
	}
	set, err := b.svc.PolicyGet(b.ctx, 0)
	require.NoError(t, err)
	require.Len(t, set.Rules, n+4, "the seeds for invoices, credit notes and payments, and n")
	require.Equal(t, n, b.count(t, `SELECT count(*) FROM audit_events WHERE event->>'type' = 'approval_policy.changed'`))
	b.verify(t)
}
