package approvals_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// The requester's live authority is checked in the consuming transaction
// (ADR-0022 §4): a call authenticated before its requester was disabled
// or demoted (a chat run, an MCP session or a token inside its 15 s
// re-check window) spends nothing, and the approval waits for them.
func TestGateRefusesARequesterWhoLostTheirAuthority(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.target(t, "inv-1", 500)
	c := call(t, "issue-invoice", b.clerk, "inv-1")
	id := b.required(t, c, "inv-1")
	b.approve(t, b.appr1, id)
	audits := b.count(t, `SELECT count(*) FROM audit_events`)

	for name, change := range map[string][2]string{
		"disabled": {`UPDATE users SET disabled = true WHERE id = $1`, `UPDATE users SET disabled = false WHERE id = $1`},
		"demoted":  {`UPDATE users SET role = 'approver' WHERE id = $1`, `UPDATE users SET role = 'clerk' WHERE id = $1`},
		"promoted": {`UPDATE users SET role = 'admin' WHERE id = $1`, `UPDATE users SET role = 'clerk' WHERE id = $1`},
	} {
		_, err := b.db.Exec(b.ctx, change[0], b.clerk.UserID)
		require.NoError(t, err)
		_, err = b.invoke(b.ctx, c, "inv-1")
		refused(t, err, http.StatusForbidden, problem.CodeForbidden)
		require.Equal(t, approvals.StatusApproved, b.get(t, id).Status, "%s: nothing spent", name)
		require.Equal(t, "draft", b.targetStatus(t, "inv-1"), name)
		require.Equal(t, audits, b.count(t, `SELECT count(*) FROM audit_events`), "%s: nothing written", name)
		require.Equal(t, 0, b.count(t, `SELECT count(*) FROM policy_effects`), name)
		_, err = b.db.Exec(b.ctx, change[1], b.clerk.UserID)
		require.NoError(t, err)
	}
	// Restored, the same principal spends it.
	_, err := b.invoke(b.ctx, c, "inv-1")
	require.NoError(t, err)
	require.Equal(t, approvals.StatusConsumed, b.get(t, id).Status)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM policy_effects WHERE approval_id = $1`, id))
}

// A disabling racing many spends of the requester's approvals: each
// effect either commits before the disabling (the requester's row lock
// makes it wait) or is refused; none commits after it.
func TestRequesterDisabledWhileSpending(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	const n = 16
	ids := make([]string, n)
	for i := range ids {
		target := "inv-" + string(rune('a'+i))
		b.target(t, target, 500)
		ids[i] = b.required(t, call(t, "issue-invoice", b.clerk, target), target)
		b.approve(t, b.appr1, ids[i])
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range ids {
		target := "inv-" + string(rune('a'+i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := b.invoke(b.ctx, call(t, "issue-invoice", b.clerk, target), target)
			if err != nil {
				require.True(t, problem.HasCode(err, problem.CodeForbidden), "%v", err)
			}
		}()
	}
	var disabledSeq int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		require.NoError(t, identity.UserSetDisabled(b.ctx, b.db, b.clerk.UserID, true))
		require.NoError(t, b.db.QueryRow(b.ctx, `SELECT coalesce(max(seq), 0) FROM audit_events`).Scan(&disabledSeq))
	}()
	close(start)
	wg.Wait()
	// Every effect's audit event precedes what the chain held once the
	// disabling had committed.
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued' AND seq > $1`, disabledSeq))
	consumed := b.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`)
	require.Equal(t, consumed, b.count(t, `SELECT count(*) FROM targets WHERE status = 'issued'`))
	require.Equal(t, n-consumed, b.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'approved'`))
}
