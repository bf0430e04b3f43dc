package approvals_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/stretchr/testify/require"
)

// eventApproval decodes an event's data, the approval as the API shows it.
func eventApproval(t *testing.T, ev outbox.Event) approvals.Approval {
	t.Helper()
	var a approvals.Approval
	require.NoError(t, json.Unmarshal(ev.Data, &a))
	return a
}

// A request, its reuse, and its approval are recorded in the transactions
// that make them: one approval.requested, then one approval.decided
// carrying the approved request; reusing the pending request records
// nothing new.
func TestApprovalEventsFollowRequestAndDecision(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	id := b.required(t, c, "inv-1")
	require.Equal(t, id, b.required(t, c, "inv-1"))
	evs := outboxtest.Events(t, b.db)
	require.Len(t, evs, 1)
	require.Equal(t, events.ApprovalRequested, evs[0].Type)
	got := eventApproval(t, evs[0])
	require.Equal(t, id, got.ID.String())
	require.Equal(t, approvals.StatusPending, got.Status)
	require.Equal(t, b.clerk.UserID, got.RequestedBy.ID)

	_, err := b.svc.Decide(b.ctx, b.appr1, capability.PathREST, uuid.MustParse(id), etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)
	evs = outboxtest.Events(t, b.db)
	require.Equal(t, []events.Type{events.ApprovalRequested, events.ApprovalDecided}, outboxtest.Types(t, b.db))
	decided := eventApproval(t, evs[1])
	require.Equal(t, approvals.StatusApproved, decided.Status)
	require.Equal(t, b.clock.Now().Add(approvals.DefaultApprovedTTL).UTC(), decided.ExpiresAt, "the mail says until when it is usable")
	require.NotEqual(t, evs[0].ID, evs[1].ID)
}

// Above the threshold the first of two approvals decides nothing and
// records no event; the second does. A denial is an approval.decided
// carrying the reason.
func TestApprovalDecidedOnlyWhenTheRequestIsDecided(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "big", 2_000_000)
	id := uuid.MustParse(b.required(t, call(t, "issue-invoice", b.clerk, "big"), "big"))
	_, err := b.svc.Decide(b.ctx, b.appr1, capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)
	require.Equal(t, []events.Type{events.ApprovalRequested}, outboxtest.Types(t, b.db))
	_, err = b.svc.Decide(b.ctx, b.appr2, capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)
	require.Equal(t, []events.Type{events.ApprovalRequested, events.ApprovalDecided}, outboxtest.Types(t, b.db))

	b.target(t, "small", 100)
	id = uuid.MustParse(b.required(t, call(t, "issue-invoice", b.clerk, "small"), "small"))
	_, err = b.svc.Decide(b.ctx, b.appr1, capability.PathREST, id, etag.IfMatch{}, approvals.DecisionDeny, "wrong customer")
	require.NoError(t, err)
	evs := outboxtest.Events(t, b.db)
	require.Len(t, evs, 4)
	denied := eventApproval(t, evs[3])
	require.Equal(t, events.ApprovalDecided, evs[3].Type)
	require.Equal(t, approvals.StatusDenied, denied.Status)
	require.Len(t, denied.Decisions, 1)
	require.Equal(t, "wrong customer", denied.Decisions[0].Reason)
}

// Every way a request lapses records approval.expired once: the sweep, and
// the gate answering APPROVAL_EXPIRED.
func TestApprovalExpiredIsRecordedWhereverTheRequestLapses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "a", 100)
	b.target(t, "b", 100)
	b.required(t, call(t, "issue-invoice", b.clerk, "a"), "a")
	cb := call(t, "issue-invoice", b.clerk, "b")
	b.required(t, cb, "b")
	b.clock.Advance(approvals.DefaultPendingTTL + time.Second)

	_, err := b.invoke(b.ctx, cb, "b")
	refused(t, err, http.StatusForbidden, approvals.CodeApprovalExpired)
	n, err := b.svc.ExpireDue(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = b.svc.ExpireDue(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []events.Type{events.ApprovalRequested, events.ApprovalRequested, events.ApprovalExpired, events.ApprovalExpired},
		outboxtest.Types(t, b.db))
}

// A refusal that writes nothing records nothing.
func TestNoEligibleApproverRecordsNoEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.db.Exec(b.ctx, `UPDATE users SET disabled = true WHERE role IN ('approver', 'admin')`)
	require.NoError(t, err)
	b.target(t, "x", 100)
	_, err = b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, "x"), "x")
	refused(t, err, http.StatusForbidden, approvals.CodeNoEligibleApprover)
	require.Empty(t, outboxtest.Events(t, b.db))
}
