package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// slowModel is an OpenAI-compatible endpoint that starts an answer
// ("Partial ") and then keeps the stream open, sending SSE keep-alive
// comments (as proxies and slow local servers do), until its client leaves
// or the test ends.
type slowModel struct {
	srv     *httptest.Server
	arrived chan struct{}
	once    sync.Once
	stop    chan struct{}
	auth    chan string
}

func newSlowModel(t *testing.T) *slowModel {
	m := &slowModel{arrived: make(chan struct{}), stop: make(chan struct{}), auth: make(chan string, 10)}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case m.auth <- r.Header.Get("Authorization"):
		default:
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Partial "}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		m.once.Do(func() { close(m.arrived) })
		tk := time.NewTicker(300 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-m.stop:
				return
			case <-tk.C:
				fmt.Fprint(w, ": keep-alive\n\n")
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(func() { close(m.stop); m.srv.CloseClientConnections(); m.srv.Close() })
	return m
}

func createClerk(t *testing.T, dbURL string) string {
	t.Helper()
	r := invoke(context.Background(), env{"DATABASE_URL": dbURL}, "users", "create", "--username", "clerk", "--role", "clerk")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	return lines[len(lines)-1]
}

func waitServeReady(t *testing.T, addr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, 30*time.Second, 50*time.Millisecond)
}

func chatBody(id, text string) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "trigger": "submit-message", "messages": []any{
		map[string]any{"id": "u1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}},
	}})
	return b
}

// TestServeShutdownEndsAChatWaitingOnASlowModel: SIGTERM (serve's context
// cancelled) while a chat waits on a model that streams slowly (keep-alives
// only, so no idle timeout fires). serve ends the chat at once, exits 0,
// the partial answer is stored and the conversation's lease released, so
// a restarted replica continues it instead of answering CONVERSATION_BUSY
// for up to 10 minutes; the client is told to send its message again.
func TestServeShutdownEndsAChatWaitingOnASlowModel(t *testing.T) {
	t.Parallel()
	m := newSlowModel(t)
	dbURL := storetest.URL(t)
	token := createClerk(t, dbURL)
	addr := freeAddr(t)
	e := env{"DATABASE_URL": dbURL, "INVOICED_ADDR": addr,
		"INVOICED_MODEL_PROVIDER": "openai", "INVOICED_MODEL_BASE_URL": m.srv.URL + "/v1",
		"INVOICED_MODEL_NAME": "m", "INVOICED_MODEL_API_KEY": "sk-test-key"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- invoke(ctx, e, "serve") }()
	waitServeReady(t, addr)

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat", bytes.NewReader(chatBody("conv-slow", "hello")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	streamDone := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			streamDone <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		var sb strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			sb.WriteString(sc.Text() + "\n")
		}
		streamDone <- sb.String()
	}()
	select {
	case <-m.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never called")
	}
	time.Sleep(500 * time.Millisecond)

	start := time.Now()
	cancel() // SIGTERM
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop within 60 s of SIGTERM")
	}
	took := time.Since(start)
	t.Logf("serve stopped after %v with code %d; stderr: %s", took, r.code, r.stderr)

	// What a restarted replica finds, right after this one exited.
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var busy bool
	var busyUntil *time.Time
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT busy_token IS NOT NULL, busy_until FROM conversations WHERE id = 'conv-slow'`).Scan(&busy, &busyUntil))
	var parts string
	_ = conn.QueryRow(context.Background(),
		`SELECT coalesce(string_agg(parts::text, ' '), '') FROM conversation_messages WHERE conversation_id = 'conv-slow' AND role = 'assistant'`).Scan(&parts)
	t.Logf("after exit: lease held=%v busy_until=%v; stored assistant parts: %s", busy, busyUntil, parts)

	var problems []string
	if r.code != 0 {
		problems = append(problems, fmt.Sprintf("serve exited %d (%q) instead of shutting down gracefully", r.code, strings.TrimSpace(r.stderr)))
	}
	if busy {
		problems = append(problems, fmt.Sprintf("the conversation's lease is still held after serve exited (busy until %v): a restarted replica answers CONVERSATION_BUSY", busyUntil))
	}
	if !strings.Contains(parts, "Partial") {
		problems = append(problems, "the text the model had streamed before shutdown was not stored")
	}
	require.Empty(t, problems, "shutdown with a chat waiting on a slow model (took %v)", took)
	require.Less(t, took, 10*time.Second)
	stream := <-streamDone
	require.Contains(t, stream, "The server is restarting", "the client still reading is told why the answer stopped")
	require.True(t, strings.HasSuffix(strings.TrimSpace(stream), "data: [DONE]"), stream)
}

// TestServeShutdownEndsAChatToolBlockedOnALock: SIGTERM while a chat's
// tool (list-customers, a read) waits on a lock another session holds (a
// migration, an operator's LOCK TABLE, a long transaction). A shutdown
// cancels even a running tool, so serve exits well within its 20 s grace
// instead of waiting for the lock (or the 9.5 min a run may last), and
// the conversation is released.
func TestServeShutdownEndsAChatToolBlockedOnALock(t *testing.T) {
	t.Parallel()
	toolCalled := make(chan struct{})
	var once sync.Once
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"list-customers","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		once.Do(func() { close(toolCalled) })
	}))
	t.Cleanup(func() { close(stop); srv.Close() })

	dbURL := storetest.URL(t)
	token := createClerk(t, dbURL)
	// Another session holds the customers table.
	locker, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	tx, err := locker.Begin(context.Background())
	require.NoError(t, err)
	_, err = tx.Exec(context.Background(), `LOCK TABLE customers IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	released := false
	release := func() {
		if !released {
			released = true
			_ = tx.Rollback(context.Background())
			_ = locker.Close(context.Background())
		}
	}
	t.Cleanup(release)

	addr := freeAddr(t)
	e := env{"DATABASE_URL": dbURL, "INVOICED_ADDR": addr,
		"INVOICED_MODEL_PROVIDER": "openai", "INVOICED_MODEL_BASE_URL": srv.URL + "/v1", "INVOICED_MODEL_NAME": "m"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- invoke(ctx, e, "serve") }()
	waitServeReady(t, addr)

	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat", bytes.NewReader(chatBody("conv-lock", "list customers")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = bufio.NewReader(resp.Body).WriteTo(&bytes.Buffer{})
			resp.Body.Close()
		}
	}()
	select {
	case <-toolCalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never called")
	}
	// Wait until the tool's query waits on the lock, watched from a
	// connection of its own: the locker's open transaction would keep
	// reading the activity snapshot its first look took (PostgreSQL keeps
	// one per transaction), and miss a query that started waiting later.
	watcher, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = watcher.Close(context.Background()) })
	require.Eventually(t, func() bool {
		var n int
		err := watcher.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'invoiced' AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n > 0
	}, 20*time.Second, 100*time.Millisecond, "the tool's query never waited on the lock")

	start := time.Now()
	cancel() // SIGTERM
	select {
	case r := <-done:
		t.Logf("serve stopped after %v with code %d: %s", time.Since(start), r.code, r.stderr)
		require.Equal(t, 0, r.code, r.stderr)
		require.Less(t, time.Since(start), 10*time.Second)
		var busy bool
		require.NoError(t, locker.QueryRow(context.Background(), `SELECT busy_token IS NOT NULL FROM conversations WHERE id = 'conv-lock'`).Scan(&busy))
		require.False(t, busy, "the conversation was released")
	case <-time.After(45 * time.Second):
		release()
		select {
		case r := <-done:
			t.Errorf("serve did not stop within 45 s of SIGTERM (its grace is 20 s); it stopped only %v after SIGTERM, once the lock was released (code %d: %s)", time.Since(start), r.code, r.stderr)
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop within 45 s of SIGTERM, nor 30 s after the lock was released")
		}
	}
}
