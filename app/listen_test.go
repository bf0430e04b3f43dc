package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// After a restart of PostgreSQL (this test's own cluster), each replica's
// LISTEN connection comes back by itself: a decision made on replica B
// after the restart wakes a long poll held by replica A.
func TestWaitWakesAcrossReplicasAfterADatabaseRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := storetest.NewCluster(t)
	a := apptest.New(t, apptest.Options{DatabaseURL: cluster.URL})
	b := a.Replica(t, apptest.Options{})
	clerk, clerkTok := a.User(t, "clara", identity.RoleClerk)
	_, bobTok := a.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, a, clerk, "issue-invoice", "inv-1", 100)

	cluster.Crash(t)
	cluster.Start(t)
	// Both replicas LISTEN again (one connection each, for approvals and
	// chat runs alike), without being told.
	require.Eventually(t, func() bool {
		var n int
		err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, store.ListenerName).Scan(&n)
		return err == nil && n == 2
	}, 30*time.Second, 50*time.Millisecond, "each replica's listener reconnects")

	done := make(chan *apptest.Response, 1)
	start := time.Now()
	go func() { done <- untilAvailable(t, a, "GET", "/v1/approvals/"+id+"?wait=60s", clerkTok) }()
	require.Eventually(t, func() bool { return waiting(a) }, 15*time.Second, 5*time.Millisecond)
	resp := untilAvailable(t, b, "POST", "/v1/approvals/"+id+"/approve", bobTok)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))

	r := <-done
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	var got approvals.Approval
	r.JSON(t, &got)
	require.Equal(t, approvals.StatusApproved, got.Status)
	require.Less(t, time.Since(start), 30*time.Second, "woken by the decision, not by the 60 s timeout")
}

// untilAvailable sends a request again while it is answered 503 with a
// Retry-After, as a client does: a pool's connections from before the
// restart fail once each (503, nothing written) before the pool replaces
// them. A 503 without Retry-After is returned, for the caller to fail on.
// It runs on other goroutines than the test's, so it asserts nothing.
func untilAvailable(t *testing.T, h *apptest.Harness, method, path, token string) *apptest.Response {
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := h.Do(t, method, path, token, nil)
		if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || time.Now().After(deadline) {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
}
