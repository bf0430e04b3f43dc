package approvals_test

import (
	"context"
	"encoding/json"
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
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// restrict puts in force, for issue-invoice in EUR from 0, a tier of
// approvers that only the named users decide.
func (b *bundle) restrict(t *testing.T, approvers int, deciders ...string) {
	t.Helper()
	zero := int64(0)
	_, err := b.svc.PolicySet(b.ctx, b.admin, capability.PathCLI, approvals.RuleInput{
		Capability: "issue-invoice", Currency: "EUR", MinAmount: &zero, Approvers: approvers,
		Deciders: &approvals.AudienceInput{Users: deciders}}, etag.IfMatch{})
	require.NoError(t, err)
}

func (b *bundle) delegate(t *testing.T, from identity.Principal, to string, start, until time.Time) *approvals.Delegation {
	t.Helper()
	in := approvals.DelegationInput{Delegate: to, Until: until.Format(time.RFC3339Nano)}
	if !start.IsZero() {
		in.From = start.Format(time.RFC3339Nano)
	}
	d, err := b.svc.DelegationCreate(b.ctx, from, capability.PathREST, in)
	require.NoError(t, err)
	return d
}

func (b *bundle) yes(p identity.Principal, id string) (*approvals.Approval, error) {
	return b.svc.Decide(b.ctx, p, capability.PathREST, uuid.MustParse(id), etag.IfMatch{}, approvals.DecisionApprove, "")
}

// Done when: a delegation's window is from (inclusive) until
// (exclusive). appr2 is no decider of the tier; appr1 hands them their
// approvals from 1 h to 2 h from now: a microsecond before the start and
// at the end appr2 is refused, at the start and a microsecond before the
// end appr2 decides, for appr1, as the decision and the audit chain say.
func TestDelegationWindowFromInclusiveUntilExclusive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.restrict(t, 1, "appr1")
	t0 := b.clock.Now()
	b.delegate(t, b.appr1, "appr2", t0.Add(time.Hour), t0.Add(2*time.Hour))
	ids := make([]string, 4)
	for i, name := range []string{"a", "b", "c", "d"} {
		b.target(t, name, 100)
		ids[i] = b.required(t, call(t, "issue-invoice", b.clerk, name), name)
	}
	for _, step := range []struct {
		at      time.Duration
		request string
		decides bool
	}{
		{time.Hour - time.Microsecond, ids[0], false},
		{time.Hour, ids[0], true},
		{2*time.Hour - time.Microsecond, ids[1], true},
		{2 * time.Hour, ids[2], false},
	} {
		b.clock.Advance(t0.Add(step.at).Sub(b.clock.Now()))
		a, err := b.yes(b.appr2, step.request)
		if !step.decides {
			refused(t, err, http.StatusForbidden, problem.CodeForbidden)
			continue
		}
		require.NoError(t, err, "at +%s", step.at)
		require.Equal(t, approvals.StatusApproved, a.Status)
		require.Equal(t, "appr2", a.Decisions[0].Approver.Username)
		require.Equal(t, "appr1", a.Decisions[0].OnBehalfOf.Username)
	}
	var (
		actor  string
		behalf string
	)
	require.NoError(t, b.db.QueryRow(b.ctx, `SELECT event->>'actor', event->'data'->'on_behalf_of'->>'username' FROM audit_events
		WHERE type = 'approval.decided' AND subject_id = $1`, ids[0]).Scan(&actor, &behalf))
	require.Equal(t, "appr2", actor)
	require.Equal(t, "appr1", behalf)
	b.verify(t)
}

// Done when: a delegate who is the request's requester is refused: an
// admin who requested cannot decide it holding an approver's approvals,
// nor can an approver decide on the authority of a delegator who is the
// requester.
func TestDelegateWhoIsTheRequesterIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.restrict(t, 1, "appr1", "admin")
	now := b.clock.Now()
	b.delegate(t, b.appr1, "admin", time.Time{}, now.Add(time.Hour))
	b.target(t, "inv", 100)
	id := b.required(t, call(t, "issue-invoice", b.admin, "inv"), "inv")
	_, err := b.yes(b.admin, id)
	refused(t, err, http.StatusForbidden, problem.CodeForbidden)
	require.Zero(t, b.count(t, `SELECT count(*) FROM approval_decisions`))

	// appr2 holds the approvals of admin2, a decider who requested: no
	// authority there.
	admin2 := user(t, b.ctx, b.db, "admin2", identity.RoleAdmin)
	b.restrict(t, 1, "appr1", "admin2")
	b.delegate(t, admin2, "appr2", time.Time{}, now.Add(time.Hour))
	b.target(t, "inv2", 100)
	id = b.required(t, call(t, "issue-invoice", admin2, "inv2"), "inv2")
	_, err = b.yes(b.appr2, id)
	refused(t, err, http.StatusForbidden, problem.CodeForbidden)
	require.Zero(t, b.count(t, `SELECT count(*) FROM approval_decisions`))
}

// Done when: two delegations to one person count once. appr1 and appr3,
// the tier's two deciders, both hand their approvals to appr2: appr2's
// approval counts one of the two needed, and neither delegator can add
// theirs while their delegation runs. Once appr3 ends theirs, appr3
// decides on their own and the request is approved.
func TestTwoDelegationsToOnePersonCountOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appr3 := user(t, b.ctx, b.db, "appr3", identity.RoleApprover)
	b.restrict(t, 2, "appr1", "appr3")
	until := b.clock.Now().Add(24 * time.Hour)
	b.delegate(t, b.appr1, "appr2", time.Time{}, until)
	d3 := b.delegate(t, appr3, "appr2", time.Time{}, until)
	b.target(t, "inv", 100)
	id := b.required(t, call(t, "issue-invoice", b.clerk, "inv"), "inv")

	a, err := b.yes(b.appr2, id)
	require.NoError(t, err)
	require.Equal(t, approvals.StatusPending, a.Status)
	require.Equal(t, 1, a.Approvals)
	a, err = b.yes(b.appr2, id)
	require.NoError(t, err, "the same decision again is a no-op")
	require.Equal(t, 1, a.Approvals)
	for _, p := range []identity.Principal{b.appr1, appr3} {
		_, err = b.yes(p, id)
		refused(t, err, http.StatusConflict, approvals.CodeAlreadyDecided)
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM approval_decisions`))

	ended, err := b.svc.DelegationEnd(b.ctx, appr3, capability.PathREST, d3.ID)
	require.NoError(t, err)
	require.Equal(t, approvals.DelegationEnded, ended.Status)
	_, err = b.yes(b.appr1, id)
	refused(t, err, http.StatusConflict, approvals.CodeAlreadyDecided)
	a, err = b.yes(appr3, id)
	require.NoError(t, err)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.Equal(t, 2, a.Approvals)
	b.verify(t)
}

// Done when: a cycle is refused, and so is a chain beyond one hop and a
// second delegate for the same time; each 422 names delegate and writes
// nothing. Delegations whose windows do not meet are fine.
func TestDelegationCycleAndChainRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := b.clock.Now()
	b.delegate(t, b.appr1, "appr2", now.Add(time.Hour), now.Add(3*time.Hour))
	for _, c := range []struct {
		name string
		from identity.Principal
		to   string
		want string
	}{
		{"cycle", b.appr2, "appr1", "cycle"},
		{"the delegate hands on", b.appr2, "admin", "one hop"},
		{"someone's delegate hands on", b.admin, "appr1", "one hop"},
		{"a second delegate at once", b.appr1, "admin", "end that delegation first"},
	} {
		_, err := b.svc.DelegationCreate(b.ctx, c.from, capability.PathREST, approvals.DelegationInput{
			Delegate: c.to, From: now.Add(2 * time.Hour).Format(time.RFC3339), Until: now.Add(4 * time.Hour).Format(time.RFC3339)})
		pe := invalid(t, err, "delegate")
		require.Contains(t, pe.Errors[0].Message, c.want, c.name)
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM approval_delegations`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type LIKE 'delegation.%'`))
	// After appr1's window: appr2 may hand theirs to appr1.
	b.delegate(t, b.appr2, "appr1", now.Add(3*time.Hour), now.Add(4*time.Hour))
}

// invalid asserts err is 422 naming field and returns it.
func invalid(t *testing.T, err error, field string) *problem.Error {
	t.Helper()
	pe, ok := problem.As(err)
	require.True(t, ok, "want 422 on %s, got %v", field, err)
	require.Equal(t, http.StatusUnprocessableEntity, pe.Status, "%v", err)
	require.Equal(t, problem.CodeValidation, pe.Code)
	require.NotEmpty(t, pe.Errors)
	require.Equal(t, field, pe.Errors[0].Field, "%v", pe.Errors)
	return pe
}

// Done when: bad input is 422 naming the field, with nothing written:
// delegation to a clerk among them.
func TestDelegationBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gone := user(t, b.ctx, b.db, "gone", identity.RoleApprover)
	require.NoError(t, identity.UserSetDisabled(b.ctx, b.db, gone.UserID, true))
	now := b.clock.Now()
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	for _, c := range []struct {
		name  string
		in    approvals.DelegationInput
		field string
	}{
		{"to a clerk", approvals.DelegationInput{Delegate: "clerk", Until: ts(time.Hour)}, "delegate"},
		{"to a disabled approver", approvals.DelegationInput{Delegate: "gone", Until: ts(time.Hour)}, "delegate"},
		{"to nobody", approvals.DelegationInput{Until: ts(time.Hour)}, "delegate"},
		{"to no user", approvals.DelegationInput{Delegate: "nobody", Until: ts(time.Hour)}, "delegate"},
		{"to oneself", approvals.DelegationInput{Delegate: "appr1", Until: ts(time.Hour)}, "delegate"},
		{"no until", approvals.DelegationInput{Delegate: "appr2"}, "until"},
		{"a window of 0", approvals.DelegationInput{Delegate: "appr2", From: ts(time.Hour), Until: ts(time.Hour)}, "until"},
		{"until before from", approvals.DelegationInput{Delegate: "appr2", From: ts(2 * time.Hour), Until: ts(time.Hour)}, "until"},
		{"until not a time", approvals.DelegationInput{Delegate: "appr2", Until: "tomorrow"}, "until"},
		{"from in the past", approvals.DelegationInput{Delegate: "appr2", From: ts(-time.Microsecond), Until: ts(time.Hour)}, "from"},
		{"from not a time", approvals.DelegationInput{Delegate: "appr2", From: "2026-13-01", Until: ts(time.Hour)}, "from"},
		{"longer than a year and a day", approvals.DelegationInput{Delegate: "appr2", Until: ts(approvals.MaxDelegation + time.Microsecond)}, "until"},
	} {
		_, err := b.svc.DelegationCreate(b.ctx, b.appr1, capability.PathREST, c.in)
		invalid(t, err, c.field)
	}
	_, err := b.svc.DelegationCreate(b.ctx, b.clerk, capability.PathREST, approvals.DelegationInput{Delegate: "appr2", Until: ts(time.Hour)})
	refused(t, err, http.StatusForbidden, problem.CodeForbidden)
	require.Zero(t, b.count(t, `SELECT count(*) FROM approval_delegations`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM audit_events WHERE type LIKE 'delegation.%'`))
	// A year and a day exactly is allowed.
	b.delegate(t, b.appr1, "appr2", time.Time{}, now.Add(approvals.MaxDelegation))
}

// Done when: concurrent decisions by a delegator and their delegate count
// one vote. Each round, appr1 (who handed their approvals to appr2) and
// appr2 approve a request needing two at once: exactly one lands, the
// other is told the voice already spoke, and the request has one approval.
func TestConcurrentDecisionsByDelegatorAndDelegateCountOne(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.restrict(t, 2, "appr1", "appr2", "admin")
	b.delegate(t, b.appr1, "appr2", time.Time{}, b.clock.Now().Add(time.Hour))
	for i := range 8 {
		name := string(rune('a' + i))
		b.target(t, name, 100)
		id := b.required(t, call(t, "issue-invoice", b.clerk, name), name)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, 2)
		)
		for j, p := range []identity.Principal{b.appr1, b.appr2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[j] = b.yes(p, id)
			}()
		}
		close(start)
		wg.Wait()
		require.True(t, (errs[0] == nil) != (errs[1] == nil), "exactly one of the voice: %v / %v", errs[0], errs[1])
		for _, err := range errs {
			if err != nil {
				refused(t, err, http.StatusConflict, approvals.CodeAlreadyDecided)
			}
		}
		a := b.get(t, id)
		require.Equal(t, approvals.StatusPending, a.Status)
		require.Equal(t, 1, a.Approvals)
		// The admin, a voice of their own, completes it.
		a, err := b.yes(b.admin, id)
		require.NoError(t, err)
		require.Equal(t, approvals.StatusApproved, a.Status)
	}
	b.verify(t)
}

// Ending a delegation takes effect at once and is the delegator's alone;
// the list shows each side its delegations with their status.
func TestDelegationEndAndList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.restrict(t, 1, "appr1")
	d := b.delegate(t, b.appr1, "appr2", time.Time{}, b.clock.Now().Add(time.Hour))
	require.Equal(t, approvals.DelegationActive, d.Status)
	_, err := b.svc.DelegationEnd(b.ctx, b.appr2, capability.PathREST, d.ID)
	refused(t, err, http.StatusNotFound, problem.CodeNotFound)
	b.clock.Advance(time.Minute)
	ended, err := b.svc.DelegationEnd(b.ctx, b.appr1, capability.PathREST, d.ID)
	require.NoError(t, err)
	require.Equal(t, b.clock.Now().UTC(), *ended.EndedAt)
	b.target(t, "inv", 100)
	id := b.required(t, call(t, "issue-invoice", b.clerk, "inv"), "inv")
	_, err = b.yes(b.appr2, id)
	refused(t, err, http.StatusForbidden, problem.CodeForbidden)
	for _, p := range []identity.Principal{b.appr1, b.appr2} {
		ds, err := b.svc.DelegationList(b.ctx, p)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, approvals.DelegationEnded, ds[0].Status)
	}
	ds, err := b.svc.DelegationList(b.ctx, b.admin)
	require.NoError(t, err)
	require.Empty(t, ds)
	raw, err := json.Marshal(ended)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"status":"ended"`)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM audit_events WHERE type LIKE 'delegation.%'`))
}

// Ending a delegation races a decision that rests on it: each round the
// delegate's approval either committed before the end (the audit chain
// has the decision first, and it counts for the delegator) or is refused
// with nothing written; never a decision recorded after the end.
func TestEndingADelegationRacesADecisionThatRestsOnIt(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.restrict(t, 1, "appr1")
	for i := range 8 {
		name := string(rune('a' + i))
		b.target(t, name, 100)
		id := b.required(t, call(t, "issue-invoice", b.clerk, name), name)
		d := b.delegate(t, b.appr1, "appr2", time.Time{}, b.clock.Now().Add(time.Hour))
		var (
			wg             sync.WaitGroup
			start          = make(chan struct{})
			decErr, endErr error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, decErr = b.yes(b.appr2, id)
		}()
		go func() {
			defer wg.Done()
			<-start
			_, endErr = b.svc.DelegationEnd(b.ctx, b.appr1, capability.PathREST, d.ID)
		}()
		close(start)
		wg.Wait()
		require.NoError(t, endErr)
		a := b.get(t, id)
		if decErr != nil {
			refused(t, decErr, http.StatusForbidden, problem.CodeForbidden)
			require.Empty(t, a.Decisions)
			continue
		}
		require.Equal(t, approvals.StatusApproved, a.Status)
		require.Equal(t, "appr1", a.Decisions[0].OnBehalfOf.Username)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events e, audit_events f
			WHERE e.type = 'approval.decided' AND e.subject_id = $1 AND f.type = 'delegation.ended' AND f.subject_id = $2 AND e.seq < f.seq`, id, d.ID.String()))
	}
	b.verify(t)
}

// A decision made on a delegator's authority counts while the delegator
// may decide too: disabling them (through the service, which voids in
// the same transaction, or behind its back, which the gate's recount
// catches at use) voids it, and the request is pending again.
func TestDelegatedDecisionLapsesWithItsDelegator(t *testing.T) {
	t.Parallel()
	for name, viaService := range map[string]bool{"through the service": true, "behind its back": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.restrict(t, 1, "appr1")
			b.delegate(t, b.appr1, "appr2", time.Time{}, b.clock.Now().Add(time.Hour))
			b.target(t, "inv", 100)
			c := call(t, "issue-invoice", b.clerk, "inv")
			id := b.required(t, c, "inv")
			a, err := b.yes(b.appr2, id)
			require.NoError(t, err)
			require.Equal(t, approvals.StatusApproved, a.Status)
			_, err = b.db.Exec(b.ctx, `UPDATE users SET disabled = true WHERE id = $1`, b.appr1.UserID)
			require.NoError(t, err)
			if viaService {
				err := store.WithTx(b.ctx, b.db, func(ctx context.Context, tx pgx.Tx) error {
					_, err := b.svc.VoidDecisionsTx(ctx, tx, approvals.Actor{Name: "admin", Via: capability.PathCLI}, b.appr1.UserID, approvals.VoidApproverDisabled)
					return err
				})
				require.NoError(t, err)
				require.Equal(t, approvals.StatusPending, b.get(t, id).Status)
			}
			_, err = b.invoke(b.ctx, c, "inv")
			refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired)
			a = b.get(t, id)
			require.Equal(t, approvals.StatusPending, a.Status)
			require.False(t, a.Decisions[0].Counts)
			require.Equal(t, approvals.VoidApproverDisabled, a.Decisions[0].VoidReason)
			b.verify(t)
		})
	}
}
