package approvals_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

func (b *bundle) decide(t *testing.T, p identity.Principal, id, decision, reason string) (*approvals.Approval, error) {
	t.Helper()
	return b.svc.Decide(b.ctx, p, capability.PathREST, uuid.MustParse(id), etag.IfMatch{}, decision, reason)
}

func (b *bundle) approve(t *testing.T, p identity.Principal, id string) *approvals.Approval {
	t.Helper()
	a, err := b.decide(t, p, id, approvals.DecisionApprove, "looks right")
	require.NoError(t, err)
	return a
}

func TestGateRequestsOnceThenReusesPending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")

	id1 := b.required(t, c, "inv-1")
	id2 := b.required(t, c, "inv-1")
	require.Equal(t, id1, id2, "a pending request for the same binding is reused")

	// The same binding through another path and principal reuses it too.
	c2 := call(t, "issue-invoice", b.clerk2, "inv-1")
	c2.Via = capability.PathBinding
	require.Equal(t, id1, b.required(t, c2, "inv-1"))

	a, err := b.svc.Get(b.ctx, uuid.MustParse(id1))
	require.NoError(t, err)
	require.Equal(t, approvals.StatusPending, a.Status)
	require.Equal(t, "clerk", a.RequestedBy.Username)
	require.Equal(t, capability.PathREST, a.RequestedVia)
	require.Equal(t, approvals.Target{Type: "invoice", ID: "inv-1", Version: 1}, a.Target)
	require.JSONEq(t, `{"id":"inv-1","version":1,"amount":500}`, string(a.Snapshot))
	require.JSONEq(t, `{"id":"inv-1"}`, string(a.Input))
	require.Equal(t, 1, a.RequiredApprovals)
	require.Equal(t, b.clock.Now().Add(72*time.Hour), a.ExpiresAt)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM approval_requests`))
	require.Equal(t, "draft", b.targetStatus(t, "inv-1"))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.requested'`))
	b.verify(t)
}

func (b *bundle) targetStatus(t *testing.T, id string) string {
	t.Helper()
	var s string
	require.NoError(t, b.db.QueryRow(b.ctx, `SELECT status FROM targets WHERE id = $1`, id).Scan(&s))
	return s
}

func TestGateConsumesAnApprovalOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	id := b.required(t, c, "inv-1")
	a := b.approve(t, b.appr1, id)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.Equal(t, b.clock.Now().Add(24*time.Hour), a.ExpiresAt, "an approval is spendable for 24 h from its decision")

	g, err := b.invoke(b.ctx, c, "inv-1")
	require.NoError(t, err)
	require.Equal(t, id, g.ApprovalID)
	require.Equal(t, "issued", b.targetStatus(t, "inv-1"))

	a, err = b.svc.Get(b.ctx, uuid.MustParse(id))
	require.NoError(t, err)
	require.Equal(t, approvals.StatusConsumed, a.Status)
	require.NotNil(t, a.ConsumedAt)
	require.Equal(t, g.InvocationID, a.ConsumedBy.String())

	// Again: the caller's state check refuses before the gate; nothing is
	// created or consumed.
	_, err = b.invoke(b.ctx, c, "inv-1")
	refused(t, err, http.StatusConflict, codeInvalidTransition)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM approval_requests`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.consumed'`))
	b.verify(t)
}

func TestGateDeleteApprovalDeletesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	c := call(t, "delete-invoice", b.clerk, "inv-1")
	b.approve(t, b.appr1, b.required(t, c, "inv-1"))
	_, err := b.invoke(b.ctx, c, "inv-1")
	require.NoError(t, err)
	require.Equal(t, "deleted", b.targetStatus(t, "inv-1"))
	_, err = b.invoke(b.ctx, c, "inv-1")
	refused(t, err, http.StatusConflict, codeInvalidTransition)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`))
}

func TestGateConcurrentCallsOneWinner(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	b.approve(t, b.appr1, b.required(t, c, "inv-1"))

	const n = 64
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, n)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := b.invoke(context.Background(), c, "inv-1")
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.True(t, problem.HasCode(err, codeInvalidTransition), "losers see the issued state: %v", err)
	}
	require.Equal(t, 1, ok, "exactly one effect")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM approval_requests`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.consumed'`))
	b.verify(t)
}

// TestGateSingleUseWithoutCallerStateCheck races the gate with no state
// check at all (as if a capability forgot one): the request row lock still
// lets exactly one call consume the approval.
func TestGateSingleUseWithoutCallerStateCheck(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	id := b.required(t, c, "inv-1")
	b.approve(t, b.appr1, id)
	snap := []byte(`{}`)

	const n = 32
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		grants = make(chan capability.Grant, n)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tx, err := b.db.Begin(b.ctx)
			if err != nil {
				return
			}
			defer tx.Rollback(context.Background()) //nolint:errcheck
			g, err := b.gate.AuthorizeTx(b.ctx, tx, c, capability.Target{Type: "invoice", ID: "inv-1", Version: 1, Amount: 500, Currency: "EUR", Snapshot: snap})
			if err != nil {
				_, isProblem := problem.As(err)
				if !isProblem {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if tx.Commit(b.ctx) == nil {
				grants <- g
			}
		}()
	}
	close(start)
	wg.Wait()
	close(grants)
	require.Len(t, grants, 1)
	require.Equal(t, id, (<-grants).ApprovalID)
}

func TestGateStaleWhenTargetChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	id := b.required(t, c, "inv-1")
	b.approve(t, b.appr1, id)
	b.edit(t, "inv-1") // the draft changed after the approver saw it

	_, err := b.invoke(b.ctx, c, "inv-1")
	require.Equal(t, id, refused(t, err, http.StatusConflict, approvals.CodeApprovalStale))
	a, err := b.svc.Get(b.ctx, uuid.MustParse(id))
	require.NoError(t, err)
	require.Equal(t, approvals.StatusSuperseded, a.Status)
	require.Equal(t, "draft", b.targetStatus(t, "inv-1"))

	id2 := b.required(t, c, "inv-1")
	require.NotEqual(t, id, id2, "the next call requests anew, for the new version")
	a2, err := b.svc.Get(b.ctx, uuid.MustParse(id2))
	require.NoError(t, err)
	require.EqualValues(t, 2, a2.Target.Version)
	b.verify(t)
}

func TestGateBindsCapabilityAndTarget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-x", 500)
	b.target(t, "inv-y", 500)
	del := call(t, "delete-invoice", b.clerk, "inv-x")
	delID := b.required(t, del, "inv-x")
	b.approve(t, b.appr1, delID)

	// An approval to delete X does not issue X.
	issueID := b.required(t, call(t, "issue-invoice", b.clerk, "inv-x"), "inv-x")
	require.NotEqual(t, delID, issueID)
	require.Equal(t, "draft", b.targetStatus(t, "inv-x"))

	// An approval for X does not act on Y, even with X's input hash.
	onY := call(t, "delete-invoice", b.clerk, "inv-x")
	yID := b.required(t, onY, "inv-y")
	require.NotEqual(t, delID, yID)
	require.Equal(t, "draft", b.targetStatus(t, "inv-y"))

	// An approval for one effective input does not cover another.
	other := call(t, "delete-invoice", b.clerk, "inv-x")
	other.Input = []byte(`{"id":"inv-x","reason":"duplicate"}`)
	h, err := jsondoc.Hash(other.Input)
	require.NoError(t, err)
	other.InputHash = h
	require.NotEqual(t, delID, b.required(t, other, "inv-x"))

	a, err := b.svc.Get(b.ctx, uuid.MustParse(delID))
	require.NoError(t, err)
	require.Equal(t, approvals.StatusApproved, a.Status, "still unspent")
	_, err = b.invoke(b.ctx, del, "inv-x")
	require.NoError(t, err)
}

func TestGateExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	b.target(t, "inv-2", 500)
	c1 := call(t, "issue-invoice", b.clerk, "inv-1")
	c2 := call(t, "issue-invoice", b.clerk, "inv-2")

	// Pending past 72 h.
	pendingID := b.required(t, c1, "inv-1")
	// Approved but unused past 24 h.
	approvedID := b.required(t, c2, "inv-2")
	b.approve(t, b.appr1, approvedID)

	b.clock.Advance(24*time.Hour + time.Second)
	_, err := b.invoke(b.ctx, c2, "inv-2")
	require.Equal(t, approvedID, refused(t, err, http.StatusForbidden, approvals.CodeApprovalExpired))
	require.Equal(t, "draft", b.targetStatus(t, "inv-2"))
	require.Equal(t, pendingID, b.required(t, c1, "inv-1"), "still pending at 24 h")

	b.clock.Advance(48 * time.Hour)
	// A reader sweeps it first; the gate still tells the caller once.
	a, err := b.svc.Get(b.ctx, uuid.MustParse(pendingID))
	require.NoError(t, err)
	require.Equal(t, approvals.StatusExpired, a.Status)
	_, err = b.svc.Decide(b.ctx, b.appr1, capability.PathREST, a.ID, etag.IfMatch{}, approvals.DecisionApprove, "")
	require.True(t, problem.HasCode(err, approvals.CodeNotPending), "%v", err)
	_, err = b.invoke(b.ctx, c1, "inv-1")
	require.Equal(t, pendingID, refused(t, err, http.StatusForbidden, approvals.CodeApprovalExpired))

	// The next calls request anew.
	require.NotEqual(t, pendingID, b.required(t, c1, "inv-1"))
	require.NotEqual(t, approvedID, b.required(t, c2, "inv-2"))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.expired'`))
	b.verify(t)
}

func TestDenyDenies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 5_000_000) // quorum size: one denial still denies
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	id := b.required(t, c, "inv-1")

	_, err := b.decide(t, b.appr1, id, approvals.DecisionDeny, "  ")
	require.True(t, problem.HasCode(err, problem.CodeValidation), "a denial needs a reason: %v", err)

	b.approve(t, b.appr1, id)
	a, err := b.decide(t, b.appr2, id, approvals.DecisionDeny, "wrong customer")
	require.NoError(t, err)
	require.Equal(t, approvals.StatusDenied, a.Status)

	for range 2 {
		_, err = b.invoke(b.ctx, c, "inv-1")
		require.Equal(t, id, refused(t, err, http.StatusForbidden, approvals.CodeApprovalDenied))
		require.Contains(t, err.Error(), "wrong customer")
	}
	_, err = b.decide(t, b.admin, id, approvals.DecisionApprove, "")
	require.True(t, problem.HasCode(err, approvals.CodeNotPending), "%v", err)
	require.Equal(t, "draft", b.targetStatus(t, "inv-1"))

	// Changing the draft is how to ask again.
	b.edit(t, "inv-1")
	require.NotEqual(t, id, b.required(t, c, "inv-1"))
}

func TestQuorumNeedsDistinctApprovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "big", 1_000_000) // 10,000.00 EUR: at the threshold
	b.target(t, "small", 999_999)
	big := call(t, "issue-invoice", b.clerk, "big")
	id := b.required(t, big, "big")

	a := b.approve(t, b.appr1, id)
	require.Equal(t, 2, a.RequiredApprovals)
	require.Equal(t, approvals.StatusPending, a.Status)
	a = b.approve(t, b.appr1, id) // the same approver twice counts once
	require.Equal(t, approvals.StatusPending, a.Status)
	require.Equal(t, 1, a.Approvals)
	_, err := b.decide(t, b.appr1, id, approvals.DecisionDeny, "changed my mind")
	require.True(t, problem.HasCode(err, approvals.CodeAlreadyDecided), "%v", err)

	_, err = b.invoke(b.ctx, big, "big")
	require.Equal(t, id, refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired))

	a = b.approve(t, b.appr2, id)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.Equal(t, 2, a.Approvals)
	_, err = b.invoke(b.ctx, big, "big")
	require.NoError(t, err)

	smallID := b.required(t, call(t, "issue-invoice", b.clerk, "small"), "small")
	require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr1, smallID).Status)
}

func TestDecidersPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	disabled := user(t, b.ctx, b.db, "gone", identity.RoleApprover)
	require.NoError(t, identity.UserSetDisabled(b.ctx, b.db, disabled.UserID, true))
	// An approver asks; the requester may not decide, whatever their role.
	id := b.required(t, call(t, "issue-invoice", b.appr1, "inv-1"), "inv-1")

	for _, p := range []identity.Principal{b.appr1, b.clerk, disabled} {
		_, err := b.decide(t, p, id, approvals.DecisionApprove, "")
		pe, ok := problem.As(err)
		require.True(t, ok, "%s: %v", p.Username, err)
		require.Equal(t, http.StatusForbidden, pe.Status, p.Username)
	}
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM approval_decisions`), "refused decisions write nothing")
	require.Equal(t, approvals.StatusApproved, b.approve(t, b.admin, id).Status)
}

func TestNoEligibleApproverRefusesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	// Leave one approver (appr1) besides the admin requester.
	for _, p := range []identity.Principal{b.appr2} {
		require.NoError(t, identity.UserSetDisabled(ctx, b.db, p.UserID, true))
	}
	b.target(t, "big", 2_000_000)
	b.target(t, "small", 100)

	// The quorum needs two approvers other than the admin asking: only
	// appr1 exists.
	_, err := b.invoke(ctx, call(t, "issue-invoice", b.admin, "big"), "big")
	refused(t, err, http.StatusForbidden, approvals.CodeNoEligibleApprover)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM approval_requests`), "nothing left pending")

	require.NoError(t, identity.UserSetDisabled(ctx, b.db, b.admin.UserID, true))
	// appr1 asks; no one else may decide.
	_, err = b.invoke(ctx, call(t, "issue-invoice", b.appr1, "small"), "small")
	refused(t, err, http.StatusForbidden, approvals.CodeNoEligibleApprover)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM approval_requests`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM audit_events`))

	// A clerk asking can be served by appr1.
	b.required(t, call(t, "issue-invoice", b.clerk, "small"), "small")
}

func TestCancelByRequesterOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	id := uuid.MustParse(b.required(t, c, "inv-1"))

	_, err := b.svc.Cancel(b.ctx, b.admin, capability.PathREST, id, etag.IfMatch{})
	require.True(t, problem.HasCode(err, problem.CodeForbidden), "%v", err)
	a, err := b.svc.Cancel(b.ctx, b.clerk, capability.PathREST, id, etag.IfMatch{})
	require.NoError(t, err)
	require.Equal(t, approvals.StatusCancelled, a.Status)
	_, err = b.svc.Cancel(b.ctx, b.clerk, capability.PathREST, id, etag.IfMatch{})
	require.True(t, problem.HasCode(err, approvals.CodeNotPending), "%v", err)
	_, err = b.svc.Decide(b.ctx, b.appr1, capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
	require.True(t, problem.HasCode(err, approvals.CodeNotPending), "%v", err)

	require.NotEqual(t, id.String(), b.required(t, c, "inv-1"))
}

func TestGateRefusesMalformedCalls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	good := call(t, "issue-invoice", b.clerk, "inv-1")
	for name, mutate := range map[string]func(*capability.Call){
		"no name":      func(c *capability.Call) { c.Name = "" },
		"no principal": func(c *capability.Call) { c.Principal = identity.Principal{} },
		"bad hash":     func(c *capability.Call) { c.InputHash = "abc" },
		"bad input":    func(c *capability.Call) { c.Input = []byte(`{`) },
	} {
		c := good
		mutate(&c)
		_, err := b.invoke(b.ctx, c, "inv-1")
		require.True(t, problem.HasCode(err, problem.CodeInternal), "%s: %v", name, err)
	}
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM approval_requests`))
}
