package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mcp"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// What a session subscribed to is forgotten when it unsubscribes and
// when it ends, by DELETE or by idling past the session timeout, so the
// set a resync announces holds only what someone still watches.
func TestSubscriptionsEndWithUnsubscribeAndSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// timeout is the session timeout: 3 s is long enough for the
		// test's own requests in a row on a loaded machine, and short
		// enough to wait out.
		timeout time.Duration
		end     func(*gomcp.ClientSession) error
		// after is what is left once the client's session ended: the
		// other session's one subscription, unless it idled out too.
		after mcp.SubscriptionStats
	}{
		{"closed by the client (DELETE)", 0, (*gomcp.ClientSession).Close, mcp.SubscriptionStats{Sessions: 1, URIs: 1, Subscriptions: 1}},
		{"idle past the session timeout", 3 * time.Second, func(*gomcp.ClientSession) error { return nil }, mcp.SubscriptionStats{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, app.Config{MCP: mcp.Options{SessionTimeout: tc.timeout}})
			first, second := requestApproval(t, b), requestApproval(t, b)
			ctx := context.Background()
			stats := b.h.App.MCP().Subscriptions
			require.Zero(t, stats())

			cs := sdkSession(t, b.h.URL, b.clerk, nil)
			other := openSession(t, b.h.URL, b.clerk2, false)
			for _, uri := range []string{first, second} {
				require.NoError(t, cs.Subscribe(ctx, &gomcp.SubscribeParams{URI: uri}))
			}
			require.Empty(t, other.request("resources/subscribe", map[string]any{"uri": first}).next().Error)
			require.Equal(t, mcp.SubscriptionStats{Sessions: 2, URIs: 2, Subscriptions: 3}, stats())

			require.NoError(t, cs.Unsubscribe(ctx, &gomcp.UnsubscribeParams{URI: second}))
			require.Equal(t, mcp.SubscriptionStats{Sessions: 2, URIs: 1, Subscriptions: 2}, stats(), "unsubscribe forgets the pair")
			// Unsubscribing again changes nothing.
			require.NoError(t, cs.Unsubscribe(ctx, &gomcp.UnsubscribeParams{URI: second}))
			require.Equal(t, mcp.SubscriptionStats{Sessions: 2, URIs: 1, Subscriptions: 2}, stats())

			require.NoError(t, tc.end(cs))
			require.Eventually(t, func() bool { return stats() == tc.after }, 30*time.Second, 20*time.Millisecond,
				"the ended session's entries go: %+v", stats())
			if tc.after.Sessions == 0 {
				return
			}
			resp := other.post(other.id, map[string]any{"jsonrpc": "2.0", "id": 99, "method": "resources/unsubscribe", "params": map[string]any{"uri": first}})
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, mcp.SubscriptionStats{Sessions: 1}, stats(), "the last watcher of a URI takes it with it")
		})
	}
}

// A session that subscribed and never reads its GET stream (its TCP
// window full) delays no other session's updates: while its send stays
// blocked, another session hears of a decision.
func TestStuckStreamDelaysNoOtherSession(t *testing.T) {
	t.Parallel()
	// The stuck stream's write must stay blocked to the end of the test.
	b := setupWith(t, apptest.Options{Config: app.Config{MCP: mcp.Options{WriteTimeout: 10 * time.Minute}}, SendBuffer: stalledSendBuffer})
	stats := b.h.App.MCP().Subscriptions
	probeURI, decidedURI := requestApproval(t, b), requestApproval(t, b)
	stuck := stuckSession(t, b)
	unreadStream(t, b.h.URL, b.clerk, stuck.session)

	updates := make(chan string, 1024)
	good := sdkSession(t, b.h.URL, b.clerk2, &gomcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *gomcp.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- r.Params.URI:
			default:
			}
		},
	})
	ctx := context.Background()
	require.NoError(t, good.Subscribe(ctx, &gomcp.SubscribeParams{URI: probeURI}))
	// The client opens its GET stream on its own after initialize: an
	// update sent before it is open reaches no one, so announce until
	// one arrives.
	probeID := []string{probeURI[strings.LastIndexByte(probeURI, '/')+1:]}
	require.Eventually(t, func() bool {
		if announce(b, probeID, 1) != nil {
			return false
		}
		select {
		case <-updates:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 30*time.Second, time.Millisecond, "the Go SDK client's GET stream never opened")

	fillStream(t, b, stuck.requests)

	// Only now does the other session watch the request it waits on, so
	// no update of it dates from before the stuck stream filled.
	require.NoError(t, good.Subscribe(ctx, &gomcp.SubscribeParams{URI: decidedURI}))
	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+decidedURI[strings.LastIndexByte(decidedURI, '/')+1:]+"/approve", b.approver, map[string]any{})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	// Every update says "read it again": read on each until the decision
	// shows. A generous deadline, not a measure of speed.
	deadline := time.After(60 * time.Second)
	for approved := false; !approved; {
		select {
		case uri := <-updates:
			if uri != decidedURI {
				continue
			}
			res, err := good.ReadResource(ctx, &gomcp.ReadResourceParams{URI: decidedURI})
			require.NoError(t, err)
			var a struct{ Status string }
			require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &a))
			approved = a.Status == "approved"
		case <-deadline:
			t.Fatalf("no update of %s reached the other session while one stream was stuck (%+v)", decidedURI, stats())
		}
	}
	st := stats()
	require.Equal(t, 1, st.Sending, "the stuck session's send is still blocked: %+v", st)
	require.Equal(t, len(stuck.requests), st.MostQueued, "what waits behind it is one update per URI it watches, no more: %+v", st)
	// The other session's queue empties. Queued counts it too, and it is
	// not empty at every instant: the flood above overruns the hub's
	// buffer for the endpoint's watcher, and each time it is dropped its
	// resync announces every subscribed URI to its sessions, the other
	// one's included, until the flood's last notifications are read.
	require.Eventually(t, func() bool { return stats().Queued == len(stuck.requests) }, 60*time.Second, 10*time.Millisecond,
		"updates wait for a session that reads its stream: %+v", stats())
}

// A client that stops reading its GET stream and keeps the connection
// open is written to for WriteTimeout at most: the write fails, the
// endpoint lets go of the stream, and the session's sender is free again,
// so the client can open its stream anew.
func TestStuckStreamEndsAfterTheWriteTimeout(t *testing.T) {
	t.Parallel()
	// Long enough for fillStream to see the stream full (20 rounds) on a
	// loaded machine before the blocked write gives up.
	b := setupWith(t, apptest.Options{Config: app.Config{MCP: mcp.Options{WriteTimeout: 10 * time.Second}}, SendBuffer: stalledSendBuffer})
	stats := b.h.App.MCP().Subscriptions
	stuck := stuckSession(t, b)
	unreadStream(t, b.h.URL, b.clerk, stuck.session)
	// While a stream is open, the session cannot open another.
	require.Equal(t, http.StatusConflict, openStream(t, b.h.URL, b.clerk, stuck.session))
	fillStream(t, b, stuck.requests)

	require.Eventually(t, func() bool { return stats().Sending == 0 }, 60*time.Second, 50*time.Millisecond,
		"the stuck session's send is still blocked: %+v", stats())
	require.Eventually(t, func() bool { return openStream(t, b.h.URL, b.clerk, stuck.session) == http.StatusOK },
		60*time.Second, 50*time.Millisecond, "the endpoint still holds the stuck stream")
}

// openStream opens session's GET stream, closes it at once, and returns
// the status it was answered.
func openStream(t *testing.T, base, token, session string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// stuckStream is a session watching many requests, whose GET stream
// unreadStream opens and fillStream fills.
type stuckStream struct {
	session  string
	requests []string
}

// stuckSession opens a session watching 100 requests: updates of one URI
// collapse while one waits, so it takes many URIs to keep its stream busy.
func stuckSession(t *testing.T, b *bundle) stuckStream {
	t.Helper()
	s := openSession(t, b.h.URL, b.clerk, false)
	st := stuckStream{session: s.id}
	for _, uri := range requestApprovals(t, b, 100) {
		require.Empty(t, s.request("resources/subscribe", map[string]any{"uri": uri}).next().Error)
		st.requests = append(st.requests, uri[strings.LastIndexByte(uri, '/')+1:])
	}
	return st
}

// stalledSendBuffer is the server's socket send buffer in the tests of a
// stalled stream. Set, the kernel neither grows it nor the 1 KiB receive
// buffer of unreadStream: a backlog of 100 updates (15 KB) cannot fit in
// them, so once the stream falls behind, its write stays blocked until
// the write timeout. Left to autotuning, the kernel grew the buffers
// while the test waited, the "stuck" write completed seconds later, and
// the stream stayed open with nothing more to send.
const stalledSendBuffer = 4096

// fillStream announces each of the stuck session's requests once a round
// until its stream takes no more: for 20 rounds in a row a send stays in
// progress, nothing more is sent, and an update of every URI waits for
// it (the longest queue: another session's resyncs come and go). A round
// of 100 stays under the hub's 256 per watcher (a watcher that lags
// further is dropped and resyncs); the loop gives up at 100,000 updates.
func fillStream(t *testing.T, b *bundle, ids []string) {
	t.Helper()
	stats := b.h.App.MCP().Subscriptions
	still := 0
	for last := stats().Sent; still < 20 && last < 100000; {
		require.NoError(t, announce(b, ids, 1))
		st := stats()
		if st.Sent == last && st.Sending == 1 && st.MostQueued == len(ids) {
			still++
		} else {
			still, last = 0, st.Sent
		}
	}
	require.Equal(t, 20, still, "the stream never filled: %+v", stats())
}

// requestApprovals makes n pending approval requests over MCP in one
// session and returns their resource URIs.
func requestApprovals(t *testing.T, b *bundle, n int) []string {
	t.Helper()
	s := openSession(t, b.h.URL, b.clerk, false)
	uris := make([]string, n)
	for i := range uris {
		d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
		e := s.call("issue-invoice", map[string]any{"invoice_id": d.ID.String()}).error(t)
		require.Equal(t, "APPROVAL_REQUIRED", e.Code)
		uris[i] = e.Resource
	}
	return uris
}

// announce sends n changes of each request ids on the hub's channel, as
// decisions on any replica do.
func announce(b *bundle, ids []string, n int) error {
	_, err := b.h.Pool.Exec(context.Background(), `SELECT pg_notify($1, json_build_object('id', id, 'status', 'pending', 'version', g)::text)
		FROM unnest($2::uuid[]) id, generate_series(1, $3::int) g`, approvals.Channel, ids, n)
	return err
}

// unreadStream opens session's GET stream on a connection with a 1 KiB
// receive buffer, reads its headers and nothing more, so the endpoint's
// writes to it stall once the buffers between fill.
func unreadStream(t *testing.T, base, token, session string) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n"+
		"Mcp-Protocol-Version: 2025-11-25\r\nAuthorization: Bearer %s\r\n\r\n", u.Host, session, token)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
