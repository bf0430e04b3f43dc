package mcp_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/store"
	"github.com/stretchr/testify/require"
)

// requestApproval makes a pending approval request over MCP and returns
// its resource URI.
func requestApproval(t *testing.T, b *bundle) string {
	t.Helper()
	d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	e := openSession(t, b.h.URL, b.clerk, false).call("issue-invoice", map[string]any{"invoice_id": d.ID.String()}).error(t)
	require.Equal(t, "APPROVAL_REQUIRED", e.Code)
	return e.Resource
}

// subscribed opens a session on base subscribed to uri, with its GET
// stream open, and returns the stream's lines.
func subscribed(t *testing.T, base, token, uri string) (*rawSession, *bufio.Reader) {
	t.Helper()
	s := openSession(t, base, token, false)
	require.Empty(t, s.request("resources/subscribe", map[string]any{"uri": uri}).next().Error)
	g := get(t, base, token, s.id)
	t.Cleanup(func() { g.Body.Close() })
	require.Equal(t, http.StatusOK, g.StatusCode)
	return s, bufio.NewReader(g.Body)
}

// waitUpdated reads the GET stream until it announces uri.
func waitUpdated(t *testing.T, r *bufio.Reader, uri string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				done <- err
				return
			}
			if strings.Contains(line, "notifications/resources/updated") && strings.Contains(line, uri) {
				done <- nil
				return
			}
		}
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no update for %s", uri)
	}
}

// A replica that goes away loses its sessions, not the approval: the
// client gets 404, initializes on another replica and finds the decision.
func TestRestartedReplicaIs404AndTheApprovalSurvives(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	other := b.h.Replica(t, apptest.Options{})
	uri := requestApproval(t, b)
	s, _ := subscribed(t, other.URL, b.clerk, uri)

	other.App.Close()
	resp := s.post(s.id, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": map[string]any{"uri": uri}})
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+uri[strings.LastIndexByte(uri, '/')+1:]+"/approve", b.approver, map[string]any{})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	again := openSession(t, b.h.URL, b.clerk, false)
	m := again.request("resources/read", map[string]any{"uri": uri}).next()
	require.Contains(t, string(m.Result), `\"status\":\"approved\"`)
}

// When the process's LISTEN connection drops, decisions made meanwhile
// were not heard: every subscribed approval is announced, so clients
// re-read.
func TestListenerReconnectAnnouncesEverySubscription(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	uri := requestApproval(t, b)
	_, stream := subscribed(t, b.h.URL, b.clerk, uri)

	var killed int
	require.NoError(t, b.h.Pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, store.ListenerName).Scan(&killed))
	require.Equal(t, 1, killed)
	waitUpdated(t, stream, uri)
}
