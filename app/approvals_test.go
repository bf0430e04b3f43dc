package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/invoiced/invoiced/web"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// gateRequest asks the app's gate for target as a consequential call by
// requester would, and returns the pending request's id.
func gateRequest(t *testing.T, h *apptest.Harness, requester *identity.User, capName, target string, amount int64) string {
	t.Helper()
	input := []byte(fmt.Sprintf(`{"id":%q}`, target))
	hash, err := jsondoc.Hash(input)
	require.NoError(t, err)
	c := capability.Call{Name: capName, Principal: requester.Principal(), Via: capability.PathREST, Input: input, InputHash: hash}
	err = store.WithTx(context.Background(), h.Pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := h.App.ApprovalGate().AuthorizeTx(ctx, tx, c, capability.Target{
			Type: "invoice", ID: target, Version: 1, Amount: amount, Currency: "EUR",
			Snapshot: []byte(fmt.Sprintf(`{"id":%q,"total":%d}`, target, amount)),
		})
		return err
	})
	pe, ok := problem.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code)
	return pe.Extra["approval_id"].(string)
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}

func TestApprovalDecisionsOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := apptest.New(t, apptest.Options{})
	clerk, clerkTok := h.User(t, "clara", identity.RoleClerk)
	asker, askerTok := h.User(t, "ann", identity.RoleApprover)
	_, bobTok := h.User(t, "bob", identity.RoleApprover)
	gone, goneTok := h.User(t, "gus", identity.RoleApprover)
	_, adminTok := h.User(t, "ada", identity.RoleAdmin)

	id := gateRequest(t, h, asker, "issue-invoice", "inv-1", 500)

	// The requester, a clerk: 403, nothing written.
	for _, tok := range []string{askerTok, clerkTok} {
		resp := h.Do(t, "POST", "/v1/approvals/"+id+"/approve", tok, map[string]string{"reason": "ok"})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, string(resp.Body))
		require.Equal(t, problem.CodeForbidden, resp.Problem(t)["code"])
	}
	// A disabled approver's token stops working at once.
	require.NoError(t, identity.UserSetDisabled(ctx, h.Pool, gone.ID, true))
	resp := h.Do(t, "POST", "/v1/approvals/"+id+"/approve", goneTok, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, string(resp.Body))
	// A disabled approver acting through any other path (the CLI) is 403.
	_, err := h.App.Approvals().Decide(ctx, gone.Principal(), capability.PathCLI, mustUUID(t, id), etag.IfMatch{}, approvals.DecisionApprove, "")
	require.True(t, problem.HasCode(err, problem.CodeForbidden), "%v", err)

	// Bad input: unknown field, malformed id, deny without a reason.
	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/approve", bobTok, `{"reasn":"typo"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/approve", bobTok, `{"reason":`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "POST", "/v1/approvals/not-an-id/approve", bobTok, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/deny", bobTok, map[string]string{"reason": ""})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, string(resp.Body))
	var n int
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT count(*) FROM approval_decisions`).Scan(&n))
	require.Zero(t, n, "refused decisions write nothing")

	// An approver: ok, with the snapshot in the body.
	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/approve", bobTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var a approvals.Approval
	resp.JSON(t, &a)
	require.Equal(t, approvals.StatusApproved, a.Status)
	require.JSONEq(t, `{"id":"inv-1","total":500}`, string(a.Snapshot))
	require.Equal(t, "bob", a.Decisions[0].Approver.Username)

	// Cancel is the requester's, and only while pending.
	id2 := gateRequest(t, h, clerk, "delete-invoice", "inv-2", 500)
	resp = h.Do(t, "POST", "/v1/approvals/"+id2+"/cancel", adminTok, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "POST", "/v1/approvals/"+id2+"/cancel", clerkTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "POST", "/v1/approvals/"+id2+"/approve", adminTok, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, string(resp.Body))
	require.Equal(t, approvals.CodeNotPending, resp.Problem(t)["code"])
}

func TestApprovalListFiltersAndPages(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	h.User(t, "bob", identity.RoleApprover)
	_, adminTok := h.User(t, "ada", identity.RoleAdmin)
	var ids []string
	for i := range 3 {
		ids = append(ids, gateRequest(t, h, clerk, "issue-invoice", fmt.Sprintf("inv-%d", i), 100))
	}
	resp := h.Do(t, "POST", "/v1/approvals/"+ids[0]+"/approve", adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))

	var lst page.List[*approvals.Approval]
	resp = h.Do(t, "GET", "/v1/approvals?limit=2", tok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &lst)
	require.Len(t, lst.Data, 2)
	require.Equal(t, ids[2], lst.Data[0].ID.String(), "newest first")
	require.True(t, lst.HasMore)
	require.NotNil(t, lst.NextCursor)
	resp = h.Do(t, "GET", "/v1/approvals?limit=2&cursor="+*lst.NextCursor, tok, nil)
	lst = page.List[*approvals.Approval]{}
	resp.JSON(t, &lst)
	require.Len(t, lst.Data, 1)
	require.Equal(t, ids[0], lst.Data[0].ID.String())
	require.False(t, lst.HasMore)
	require.Nil(t, lst.NextCursor)

	lst = page.List[*approvals.Approval]{}
	h.Do(t, "GET", "/v1/approvals?status=approved", tok, nil).JSON(t, &lst)
	require.Len(t, lst.Data, 1)
	require.Equal(t, ids[0], lst.Data[0].ID.String())

	for _, q := range []string{"status=nope", "cursor=xyz", "cursor=AAAA", "limit=0", "limit=101"} {
		resp = h.Do(t, "GET", "/v1/approvals?"+q, tok, nil)
		require.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, resp.StatusCode, q+": "+string(resp.Body))
	}
	resp = h.Do(t, "GET", "/v1/approvals/"+ids[1]+"?wait=61s", tok, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "GET", "/v1/approvals/0190d3f0-0000-7000-8000-000000000000", tok, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(resp.Body))
}

// replica starts another instance of the service over dbURL, as a second
// `invoiced serve` process would be.
func replica(t *testing.T, dbURL string) *apptest.Harness {
	t.Helper()
	pool := storetest.PoolFor(t, dbURL)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), app.Config{}, pool, log)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	a.Routes(e)
	srv := httptest.NewServer(openapitest.Wrap(t, e))
	t.Cleanup(srv.Close)
	return &apptest.Harness{URL: srv.URL, DBURL: dbURL, Pool: pool, App: a, Server: srv}
}

// TestWaitWakesAcrossReplicas is DESIGN.md §3's promise: a decision made on
// replica B wakes a long poll held by replica A, through LISTEN/NOTIFY.
func TestWaitWakesAcrossReplicas(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{})
	b := replica(t, a.DBURL)
	clerk, clerkTok := a.User(t, "clara", identity.RoleClerk)
	_, bobTok := a.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, a, clerk, "issue-invoice", "inv-1", 100)

	type result struct {
		resp *apptest.Response
		at   time.Time
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		resp := a.Do(t, "GET", "/v1/approvals/"+id+"?wait=30s", clerkTok, nil)
		done <- result{resp, time.Now()}
	}()
	// Let A's poll reach its wait before B decides.
	require.Eventually(t, func() bool { return waiting(a) }, 5*time.Second, 5*time.Millisecond)
	decided := time.Now()
	resp := b.Do(t, "POST", "/v1/approvals/"+id+"/approve", bobTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))

	r := <-done
	require.Equal(t, http.StatusOK, r.resp.StatusCode, string(r.resp.Body))
	var got approvals.Approval
	r.resp.JSON(t, &got)
	require.Equal(t, approvals.StatusApproved, got.Status)
	latency := r.at.Sub(decided)
	t.Logf("decision on B woke the wait on A %s after the decision request started (poll held %s)", latency, r.at.Sub(start))
	require.Less(t, r.at.Sub(start), 15*time.Second, "woken by the decision, not by the 30 s timeout")
}

// waiting reports whether some long poll or stream of a is subscribed.
func waiting(h *apptest.Harness) bool { return h.App.Approvals().Waiters() > 0 }

func TestWaitTimesOutUnchanged(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)
	start := time.Now()
	resp := h.Do(t, "GET", "/v1/approvals/"+id+"?wait=300ms", tok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	var a approvals.Approval
	resp.JSON(t, &a)
	require.Equal(t, approvals.StatusPending, a.Status)
}

func TestEventsStreamStatusChanges(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	_, bobTok := h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", h.URL+"/v1/approvals/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	rd := bufio.NewReader(resp.Body)
	_, err = rd.ReadString('\n') // the opening comment
	require.NoError(t, err)

	r := h.Do(t, "POST", "/v1/approvals/"+id+"/approve", bobTok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	var frame strings.Builder
	for !strings.Contains(frame.String(), `"status":"approved"`) {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, "stream so far: %s", frame.String())
		frame.WriteString(line)
	}
	require.Contains(t, frame.String(), "event: approval\n")
	require.Contains(t, frame.String(), `"id":"`+id+`"`)
}

// An EventSource that reconnects (it sends the last id it saw) is told to
// re-read first: what changed while it was away is not replayed.
func TestEventsStreamTellsAReconnectingClientToResync(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	_, tok := h.User(t, "clara", identity.RoleClerk)
	read := func(lastID string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", h.URL+"/v1/approvals/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		buf := make([]byte, 256)
		n, err := resp.Body.Read(buf)
		require.NoError(t, err)
		return string(buf[:n])
	}
	require.Equal(t, ": approvals\n\n", read(""))
	require.Equal(t, ": approvals\n\nevent: resync\ndata: {}\n\n", read("0190a5a0-0000-7000-8000-000000000001.2"))
}

// TestShutdownEndsStreamsAndPolls: graceful shutdown is not held for its
// grace period by open event streams and long polls.
func TestShutdownEndsStreamsAndPolls(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{}) // users and a request in a database of our own
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)

	// A second instance served the way `invoiced serve` does, by Echo's
	// own server, so its shutdown hooks run.
	pool := storetest.PoolFor(t, h.DBURL)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), app.Config{}, pool, log)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	a.Routes(e)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// As e.Start serves it, with every exchange held to the document.
	e.Server.Handler = openapitest.Wrap(t, e)
	go func() { _ = e.Server.Serve(ln) }()
	base := "http://" + ln.Addr().String()

	get := func(path string) *http.Response {
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	stream := get("/v1/approvals/events")
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)
	poll := make(chan *http.Response, 1)
	go func() { poll <- get("/v1/approvals/" + id + "?wait=60s") }()
	require.Eventually(t, func() bool { return a.Approvals().Waiters() == 2 }, 5*time.Second, 5*time.Millisecond)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Shutdown(ctx))
	took := time.Since(start)
	t.Logf("shutdown with an open stream and poll took %s", took)
	require.Less(t, took, 15*time.Second, "not held for the poll's 60 s")

	rest, err := io.ReadAll(stream.Body)
	require.NoError(t, err, "the stream ended cleanly")
	require.Contains(t, string(rest), "event: resync")
	resp := <-poll
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// openEvents opens GET /v1/approvals/events with the given headers and
// reads past its opening comment.
func openEvents(t *testing.T, h *apptest.Harness, headers ...string) (*bufio.Reader, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", h.URL+"/v1/approvals/events", nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": approvals\n", line)
	return rd, func() { resp.Body.Close(); cancel() }
}

// untilEnd reads rd to its end and returns what came, failing the test
// if the stream is still open when ctx's deadline passes.
func untilEnd(t *testing.T, rd *bufio.Reader) string {
	t.Helper()
	rest, err := io.ReadAll(rd)
	require.NoError(t, err, "the server ended the stream (not the client's deadline): %s", rest)
	return string(rest)
}

// An open event stream outlives neither its token nor its session: within
// a heartbeat of the credential's end, the stream ends, and EventSource's
// reconnect is refused. Until then it goes on, keep-alive after keep-alive.
func TestEventsStreamEndsWithItsCredential(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{Config: app.Config{EventsHeartbeat: 50 * time.Millisecond}})
	ctx := context.Background()
	clerk, _ := h.User(t, "clara", identity.RoleClerk)

	keepsGoing := func(t *testing.T, rd *bufio.Reader) {
		t.Helper()
		for range 3 {
			line, err := rd.ReadString('\n')
			require.NoError(t, err)
			if line == "\n" {
				continue
			}
			require.Equal(t, ": keep-alive\n", line)
		}
	}

	t.Run("revoked token", func(t *testing.T) {
		tok, err := identity.TokenCreate(ctx, h.Pool, clerk.ID, "stream")
		require.NoError(t, err)
		rd, done := openEvents(t, h, "Authorization", "Bearer "+tok)
		defer done()
		keepsGoing(t, rd)
		require.NoError(t, identity.TokenRevoke(ctx, h.Pool, tok))
		untilEnd(t, rd)
		require.Equal(t, http.StatusUnauthorized, h.Do(t, "GET", "/v1/approvals/events", tok, nil).StatusCode)
	})
	t.Run("signed out session", func(t *testing.T) {
		sid, _, err := web.SessionCreate(ctx, h.Pool, clerk.ID, time.Hour)
		require.NoError(t, err)
		rd, done := openEvents(t, h, "Cookie", web.SessionCookie+"="+sid)
		defer done()
		keepsGoing(t, rd)
		require.NoError(t, web.SessionDelete(ctx, h.Pool, sid))
		untilEnd(t, rd)
	})
	t.Run("changed role", func(t *testing.T) {
		bob, bobTok := h.User(t, "bob", identity.RoleApprover)
		rd, done := openEvents(t, h, "Authorization", "Bearer "+bobTok)
		defer done()
		keepsGoing(t, rd)
		_, err := h.Pool.Exec(ctx, `UPDATE users SET role = 'clerk', version = version + 1 WHERE id = $1`, bob.ID)
		require.NoError(t, err)
		untilEnd(t, rd)
	})
}

// Rechecking a session's credential is not the user's activity: an open
// stream does not keep an idle session alive.
func TestEventsStreamDoesNotKeepASessionAlive(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{Config: app.Config{EventsHeartbeat: 50 * time.Millisecond}})
	ctx := context.Background()
	clerk, _ := h.User(t, "clara", identity.RoleClerk)
	sid, _, err := web.SessionCreate(ctx, h.Pool, clerk.ID, time.Hour)
	require.NoError(t, err)
	_, err = h.Pool.Exec(ctx, `UPDATE web_sessions SET last_seen_at = now() - interval '10 minutes'`)
	require.NoError(t, err)
	_, done := openEvents(t, h, "Cookie", web.SessionCookie+"="+sid) // touches it: now
	defer done()
	_, err = h.Pool.Exec(ctx, `UPDATE web_sessions SET last_seen_at = now() - interval '10 minutes'`)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // six heartbeats' rechecks
	var seen time.Time
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT last_seen_at FROM web_sessions`).Scan(&seen))
	require.Greater(t, time.Since(seen), 9*time.Minute, "the rechecks did not touch the session")
}

// A long poll that outlasts a heartbeat checks its credential before it
// answers: a token revoked while it waited gets 401, not the request.
func TestLongPollRechecksItsCredential(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{Config: app.Config{EventsHeartbeat: 50 * time.Millisecond}})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)
	go func() {
		time.Sleep(100 * time.Millisecond)
		if err := identity.TokenRevoke(context.Background(), h.Pool, tok); err != nil {
			t.Errorf("revoke: %v", err)
		}
	}()
	resp := h.Do(t, "GET", "/v1/approvals/"+id+"?wait=500ms", tok, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, string(resp.Body))
}
