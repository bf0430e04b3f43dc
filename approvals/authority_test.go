package approvals_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// TestGateRefusesADeciderAsCaller: an admin who approved a clerk's request
// cannot be the caller who spends it (she would be requester and decider
// of the one effect); the approval stays unspent for a caller who did not
// decide it. With a quorum, any one of the approvers is refused alike.
func TestGateRefusesADeciderAsCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	b.target(t, "big", 5_000_000)

	id := b.required(t, call(t, "issue-invoice", b.clerk, "inv-1"), "inv-1")
	// The admin calls first: the clerk's pending request is reused.
	require.Equal(t, id, b.required(t, call(t, "issue-invoice", b.admin, "inv-1"), "inv-1"))
	b.approve(t, b.admin, id)
	before := b.count(t, `SELECT count(*) FROM audit_events`)
	_, err := b.invoke(b.ctx, call(t, "issue-invoice", b.admin, "inv-1"), "inv-1")
	require.Equal(t, id, refused(t, err, http.StatusForbidden, problem.CodeForbidden))
	require.Equal(t, "draft", b.targetStatus(t, "inv-1"))
	require.Equal(t, before, b.count(t, `SELECT count(*) FROM audit_events`))
	a, err := b.svc.Get(b.ctx, uuid.MustParse(id))
	require.NoError(t, err)
	require.Equal(t, approvals.StatusApproved, a.Status)
	g, err := b.invoke(b.ctx, call(t, "issue-invoice", b.clerk2, "inv-1"), "inv-1")
	require.NoError(t, err, "a caller who did not decide may use it")
	require.Equal(t, id, g.ApprovalID)

	qid := b.required(t, call(t, "issue-invoice", b.clerk, "big"), "big")
	b.approve(t, b.appr1, qid)
	b.approve(t, b.admin, qid)
	_, err = b.invoke(b.ctx, call(t, "issue-invoice", b.admin, "big"), "big")
	require.Equal(t, qid, refused(t, err, http.StatusForbidden, problem.CodeForbidden))
	_, err = b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, "big"), "big")
	require.NoError(t, err)
	b.verify(t)
}
