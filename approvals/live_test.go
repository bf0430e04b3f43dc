package approvals_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/stretchr/testify/require"
)

// An approval counts only while its approver holds an enabled approving
// role, checked again in the consuming transaction: an approver demoted or
// disabled after approving (here behind the service's back, in SQL) leaves
// nothing to spend. The request returns to pending, its decision shown as
// no longer counting and why, and the target is untouched.
func TestGateRecountsDecisionsOfLiveApproversAtUse(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]struct {
		sql    string
		reason approvals.VoidReason
	}{
		"demoted":  {`UPDATE users SET role = 'clerk' WHERE id = $1`, approvals.VoidApproverDemoted},
		"disabled": {`UPDATE users SET disabled = true WHERE id = $1`, approvals.VoidApproverDisabled},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.target(t, "inv-1", 500)
			c := call(t, "issue-invoice", b.clerk, "inv-1")
			id := b.required(t, c, "inv-1")
			require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr1, id).Status)
			_, err := b.db.Exec(b.ctx, change.sql, b.appr1.UserID)
			require.NoError(t, err)

			_, err = b.invoke(b.ctx, c, "inv-1")
			require.Equal(t, id, refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired))
			require.Equal(t, "draft", b.targetStatus(t, "inv-1"), "nothing issued")
			a, err := b.svc.Get(b.ctx, uuid.MustParse(id))
			require.NoError(t, err)
			require.Equal(t, approvals.StatusPending, a.Status)
			require.Equal(t, 0, a.Approvals)
			require.Nil(t, a.DecidedAt)
			require.Equal(t, b.clock.Now().Add(approvals.DefaultPendingTTL), a.ExpiresAt, "a new pending window")
			require.Len(t, a.Decisions, 1)
			require.False(t, a.Decisions[0].Counts)
			require.Equal(t, change.reason, a.Decisions[0].VoidReason)
			require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.decisions_voided'`))

			// Nothing comes back with the approver's authority: the old
			// decision stays void, and the next call is refused again.
			_, err = b.db.Exec(b.ctx, `UPDATE users SET role = 'approver', disabled = false WHERE id = $1`, b.appr1.UserID)
			require.NoError(t, err)
			_, err = b.invoke(b.ctx, c, "inv-1")
			require.Equal(t, id, refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired))
			require.Equal(t, "draft", b.targetStatus(t, "inv-1"))
			// A fresh decision, by someone who holds the authority now, does.
			require.Equal(t, approvals.StatusApproved, b.approve(t, b.appr1, id).Status)
			g, err := b.invoke(b.ctx, c, "inv-1")
			require.NoError(t, err)
			require.Equal(t, id, g.ApprovalID)
			b.verify(t)
		})
	}
}
