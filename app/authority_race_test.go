package app_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/stretchr/testify/require"
)

// Issue and delete of one draft, each with its own approval, raced from
// many goroutines: exactly one effect, and exactly one approval spent.
func TestAuthorityConcurrentIssueAndDeleteOneEffect(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	id := g.draft(t).ID.String()
	ia := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
	da := refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+id, g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, ia, "approve", nil)
	g.decide(t, g.bobTok, da, "approve", nil)

	const n = 16
	var (
		wg               sync.WaitGroup
		start            = make(chan struct{})
		issued, deleted  atomic.Int64
		conflict, absent atomic.Int64
	)
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var resp *apptest.Response
			if i%2 == 0 {
				resp = g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, nil)
			} else {
				resp = g.h.Do(t, "DELETE", "/v1/invoices/"+id, g.clerkTok, nil)
			}
			switch resp.StatusCode {
			case http.StatusOK:
				issued.Add(1)
			case http.StatusNoContent:
				deleted.Add(1)
			case http.StatusConflict:
				conflict.Add(1)
			case http.StatusNotFound:
				absent.Add(1)
			default:
				t.Errorf("unexpected %d: %s", resp.StatusCode, resp.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, issued.Load()+deleted.Load(), "one effect")
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'approved'`))
	require.Equal(t, 2, g.count(t, `SELECT count(*) FROM approval_requests`), "no request was created by the losers")
	if issued.Load() == 1 {
		require.Equal(t, "issued", g.statusOf(t, id))
		require.Equal(t, approvals.StatusConsumed, g.approval(t, ia).Status)
	} else {
		require.Equal(t, http.StatusNotFound, g.h.Do(t, "GET", "/v1/invoices/"+id, g.clerkTok, nil).StatusCode)
		require.Equal(t, approvals.StatusConsumed, g.approval(t, da).Status)
	}
	_, err := audit.Verify(g.ctx, g.h.Pool)
	require.NoError(t, err)
}

// An approver's decision racing an edit of the draft: whichever lands
// first, the approved request never issues the edited draft.
func TestAuthorityApproveRacingEditNeverIssuesTheEdit(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	for range 8 {
		id := g.draft(t).ID.String()
		aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			g.h.Do(t, "POST", "/v1/approvals/"+aid+"/approve", g.bobTok, nil)
		}()
		go func() {
			defer wg.Done()
			resp := g.h.Do(t, "PATCH", "/v1/invoices/"+id, g.clerkTok, map[string]any{"memo": "edited while deciding"})
			if resp.StatusCode != http.StatusOK {
				t.Errorf("patch: %d %s", resp.StatusCode, resp.Body)
			}
		}()
		wg.Wait()
		resp := g.issue(t, id)
		require.NotEqual(t, http.StatusOK, resp.StatusCode, string(resp.Body))
		require.Equal(t, "draft", g.statusOf(t, id))
	}
	require.Zero(t, g.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`))
}

// Idempotency-Key: the requester's replay of a successful issue replays
// the stored answer and spends nothing; another user's call with the same
// key runs anew (keys are per principal) and meets the state check.
func TestAuthorityIdempotentReplayNeverSpendsTwice(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	_, clerk2 := g.h.User(t, "clem", identity.RoleClerk)
	id := g.draft(t).ID.String()
	key := "issue-" + id
	aid := refusedWith(t, g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, nil, "Idempotency-Key", key),
		http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, aid, "approve", nil)
	// The refusal was not stored: the same key now runs and succeeds.
	first := g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, nil, "Idempotency-Key", key)
	require.Equal(t, http.StatusOK, first.StatusCode, string(first.Body))
	events := g.count(t, `SELECT count(*) FROM audit_events`)

	again := g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, nil, "Idempotency-Key", key)
	require.Equal(t, http.StatusOK, again.StatusCode)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(again.Body))

	for _, tok := range []string{clerk2, g.adminTok} {
		r := g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", tok, nil, "Idempotency-Key", key)
		require.Empty(t, r.Header.Get("Idempotent-Replayed"))
		refusedWith(t, r, http.StatusConflict, invoices.CodeInvalidTransition)
	}
	require.Equal(t, events, g.count(t, `SELECT count(*) FROM audit_events`), "nothing spent or written")
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests`))

	// A second draft: another clerk's approved call cannot be obtained
	// by replaying a key of the first.
	y := g.draft(t).ID.String()
	r := g.h.Do(t, "POST", "/v1/invoices/"+y+"/issue", clerk2, nil, "Idempotency-Key", key)
	yid := refusedWith(t, r, http.StatusForbidden, approvals.CodeApprovalRequired)
	require.NotEqual(t, aid, yid)
	require.Equal(t, approvals.StatusPending, g.approval(t, yid).Status)
}
