package approvals_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// TestConcurrentDecisionsMeetQuorumOnce races 12 approvers on a request
// that needs 2: exactly two decisions land, the request is approved once,
// and everyone else is told it is no longer pending.
func TestConcurrentDecisionsMeetQuorumOnce(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.target(t, "big", 5_000_000)
	id := uuid.MustParse(b.required(t, call(t, "issue-invoice", b.clerk, "big"), "big"))
	const n = 12
	deciders := make([]identity.Principal, n)
	for i := range deciders {
		deciders[i] = user(t, b.ctx, b.db, fmt.Sprintf("approver-%d", i), identity.RoleApprover)
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, n)
	)
	for _, p := range deciders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := b.svc.Decide(b.ctx, p, capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
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
		require.True(t, problem.HasCode(err, approvals.CodeNotPending), "%v", err)
	}
	require.Equal(t, 2, ok)
	a, err := b.svc.Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.Len(t, a.Decisions, 2)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.decided'`))
	b.verify(t)
}

// TestConcurrentApproveAndDeny: whichever lands first decides; a denial
// after a completed approval is refused, and an approval after a denial
// too. Either way the request ends in exactly one terminal status.
func TestConcurrentApproveAndDeny(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	b.target(t, "inv", 100)
	for range 8 {
		b.edit(t, "inv")
		// Each round supersedes the last request and asks anew.
		_, _ = b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, "inv"), "inv")
		id := uuid.MustParse(b.required(t, call(t, "issue-invoice", b.clerk, "inv"), "inv"))
		var wg sync.WaitGroup
		var approveErr, denyErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, approveErr = b.svc.Decide(b.ctx, b.appr1, capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
		}()
		go func() {
			defer wg.Done()
			_, denyErr = b.svc.Decide(b.ctx, b.appr2, capability.PathREST, id, etag.IfMatch{}, approvals.DecisionDeny, "no")
		}()
		wg.Wait()
		require.True(t, (approveErr == nil) != (denyErr == nil), "exactly one decision wins: %v / %v", approveErr, denyErr)
		a, err := b.svc.Get(b.ctx, id)
		require.NoError(t, err)
		if approveErr == nil {
			require.Equal(t, approvals.StatusApproved, a.Status)
		} else {
			require.Equal(t, approvals.StatusDenied, a.Status)
		}
		require.Len(t, a.Decisions, 1)
	}
}
