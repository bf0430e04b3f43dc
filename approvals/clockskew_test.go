package approvals_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/internal/clocktest"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/stretchr/testify/require"
)

// Two replicas whose clocks differ by two minutes (or one whose clock NTP
// steps back): a superseded request written by the fast replica must not
// hide the approved request for the current version, which is spent.
func TestGateSpendsTheCurrentApprovalWhateverTheReplicasClocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	slow := b.gate
	fast := approvals.NewGate(approvals.Policy{Now: clocktest.New(b.clock.Now().Add(2 * time.Minute)).Now}, outboxtest.Emitter(t))

	// Replica "fast" records the first request (version 1).
	b.gate = fast
	b.required(t, call(t, "issue-invoice", b.clerk, "inv-1"), "inv-1")
	// The draft changes; replica "slow" serves every call from now on.
	b.edit(t, "inv-1")
	b.gate = slow
	_, err := b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, "inv-1"), "inv-1")
	refused(t, err, http.StatusConflict, approvals.CodeApprovalStale)
	id2 := b.required(t, call(t, "issue-invoice", b.clerk, "inv-1"), "inv-1")
	b.approve(t, b.appr1, id2)

	// The approved request for the current version must now be spendable.
	g, err := b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, "inv-1"), "inv-1")
	require.NoError(t, err, "approved request %s for the current version was not used", id2)
	require.Equal(t, id2, g.ApprovalID)
}
