package steploop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// Clients that go away at any moment while their conversation is opened
// must never leave it leased once no request runs on it: the next message
// would be CONVERSATION_BUSY for the lease's 10 minutes. pgx returns as
// soon as the request's context is cancelled, while PostgreSQL may still
// commit what it was sent (a new chat's statement, a follow-up's
// transaction). Each client here is cancelled at a random moment within
// about one and a half chats' time, so many land inside the opening.

// post sends msgs to conversation id under ctx and reads the
// answer; errors are the client's own going away.
func (b *bundle) post(ctx context.Context, id string, msgs ...any) (time.Duration, error) {
	buf, _ := json.Marshal(body(id, msgs...))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+"/v1/chat", bytes.NewReader(buf))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.Token)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	return time.Since(start), nil
}

// cancelEach sends n requests, 12 at a time, request i under a context
// cancelled after a random part of within; msgs(i) is its message list.
func (b *bundle) cancelEach(n int, within time.Duration, id func(int) string, msgs func(int) []any) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 12)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.Int64N(int64(within)+1)))
			defer cancel()
			_, _ = b.post(ctx, id(i), msgs(i)...)
		}()
	}
	wg.Wait()
}

// requireNoneLeased waits for every handler to finish (each ends with one
// statement) and fails when a conversation whose id starts with prefix
// is still leased.
func (b *bundle) requireNoneLeased(t *testing.T, prefix string) {
	t.Helper()
	var leased []string
	require.Eventually(t, func() bool {
		rows, err := b.Pool.Query(context.Background(),
			`SELECT id FROM conversations WHERE busy_token IS NOT NULL AND starts_with(id, $1)`, prefix)
		require.NoError(t, err)
		var ids []string
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			ids = append(ids, id)
		}
		require.NoError(t, rows.Err())
		leased = ids
		return len(ids) == 0
	}, 5*time.Second, 50*time.Millisecond, "conversations left CONVERSATION_BUSY after their clients went away: %v", &leased)
}

func instantModel() funcModel {
	return funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		_ = onText("hi")
		return model.Step{Text: "hi", FinishReason: "stop"}, nil
	})
}

func TestChatNewChatsCancelledAtAnyMomentLeaveNoLease(t *testing.T) {
	t.Parallel()
	b := setupWithModel(t, instantModel(), 0)
	var total time.Duration
	for i := range 20 {
		d, err := b.post(context.Background(), fmt.Sprintf("cal-%d", i), userMsg("u1", "hello"))
		require.NoError(t, err)
		total += d
	}
	b.cancelEach(600, total/20*3/2,
		func(i int) string { return fmt.Sprintf("gone-%d", i) },
		func(int) []any { return []any{userMsg("u1", "hello")} })
	b.requireNoneLeased(t, "gone-")
}

func TestChatFollowUpsCancelledAtAnyMomentLeaveNoLease(t *testing.T) {
	t.Parallel()
	b := setupWithModel(t, instantModel(), 0)
	const n = 400
	hist := make([][]any, n)
	var total time.Duration
	for i := range n {
		id := fmt.Sprintf("gone-%d", i)
		d, err := b.post(context.Background(), id, userMsg("u1", "hello"))
		require.NoError(t, err)
		total += d
		_, msgs := b.conversation(t, b.Token, id)
		hist[i] = anyList(msgs, userMsg("u2", "again"))
	}
	b.cancelEach(n, total/n*2,
		func(i int) string { return fmt.Sprintf("gone-%d", i) },
		func(i int) []any { return hist[i] })
	b.requireNoneLeased(t, "gone-")
	// And each is usable: what GET returns plus a new message is answered.
	for _, i := range []int{0, n / 2, n - 1} {
		id := fmt.Sprintf("gone-%d", i)
		_, msgs := b.conversation(t, b.Token, id)
		res := b.chat(t, b.Token, body(id, anyList(msgs, userMsg("u3", "still there?"))...))
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", id, res.Body)
	}
}

// A tool call that has started runs to its end when the client goes away,
// and so does the run: the next model step reads its result.
func TestChatToolRunningWhenTheClientLeavesFinishesAndIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.leaveDuringTool(t, "conv-leave")
	close(b.release)

	require.Eventually(t, func() bool {
		_, msgs := b.conversation(t, b.Token, "conv-leave")
		return toolState(t, msgs, "wait-thing") == "output-available" && strings.Contains(string(msgs[len(msgs)-1]), `"finishReason":"stop"`)
	}, 5*time.Second, 20*time.Millisecond, "the tool's own result is stored, and the run went on")
	_, msgs := b.conversation(t, b.Token, "conv-leave")
	require.Contains(t, string(msgs[len(msgs)-1]), `"output":{"waited":true}`)
	require.Contains(t, string(msgs[len(msgs)-1]), "Waited.", "the next model step ran")
}

// leaveDuringTool posts "wait for it" to conversation id, reads until the
// wait-thing call shows, and goes away while it runs.
func (b *bundle) leaveDuringTool(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf, _ := json.Marshal(body(id, userMsg("u1", "wait for it")))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+"/v1/chat", bytes.NewReader(buf))
	req.Header.Set("Authorization", "Bearer "+b.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	got, chunk := "", make([]byte, 512)
	for !strings.Contains(got, `"tool-input-available"`) {
		n, err := resp.Body.Read(chunk)
		require.NoError(t, err, "the stream ended before showing the call: %s", got)
		got += string(chunk[:n])
	}
	cancel()
	resp.Body.Close()
	time.Sleep(100 * time.Millisecond) // the server sees the connection close
}

// A tool call that has started when the stop route is called runs to its
// end (its transaction may already be committing) and is recorded with
// what it returned; the next model step is what the stop cancels.
func TestChatToolRunningWhenStoppedFinishesAndIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.leaveDuringTool(t, "conv-stop-tool")
	cancelled := b.Svc.Stopped("conv-stop-tool")
	stopped := make(chan int, 1)
	go func() {
		status, _ := b.stop(t, b.Token, "conv-stop-tool")
		stopped <- status
	}()
	select {
	case <-cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the stop request never reached the run")
	}
	close(b.release)
	require.Equal(t, http.StatusOK, <-stopped)
	_, msgs := b.conversation(t, b.Token, "conv-stop-tool")
	require.Equal(t, "output-available", toolState(t, msgs, "wait-thing"), "the tool's own result is stored")
	require.Contains(t, string(msgs[len(msgs)-1]), `"output":{"waited":true}`)
	require.NotContains(t, string(msgs[len(msgs)-1]), "Waited.", "the next model step did not run")
	require.Contains(t, string(msgs[len(msgs)-1]), `"finishReason":"interrupted"`)
}

// A call of the same step that had not started when the run was stopped
// does not start afterwards: it is recorded as not run, and only the call
// that was running finishes.
func TestChatCallsNotStartedWhenStoppedDoNotRun(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{}, 1)
	var effects atomic.Int32
	reg := registryWith("slow-read", capability.RiskRead, func(ctx context.Context, _ capability.Call) (any, error) {
		started <- struct{}{}
		<-release
		return map[string]any{"ok": true}, nil
	})
	reg.MustRegister(capability.Capability{
		Descriptor: capability.Descriptor{Name: "issue-it", Description: "A test effect.", Risk: capability.RiskConsequential, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx context.Context, _ capability.Call) (any, error) {
			effects.Add(1)
			return map[string]any{"issued": true}, nil
		},
	})
	var steps atomic.Int32
	b := setupWithConfig(t, steploop.Config{Tools: reg, Model: funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		if steps.Add(1) == 1 {
			return model.Step{FinishReason: "tool_calls", ToolCalls: []model.ToolCall{
				{ID: "c1", Name: "slow-read", Arguments: `{}`},
				{ID: "c2", Name: "issue-it", Arguments: `{}`},
			}}, nil
		}
		_ = onText("done")
		return model.Step{Text: "done", FinishReason: "stop"}, nil
	})})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = b.post(ctx, "conv-left", userMsg("u1", "go"))
	}()
	<-started
	cancel()
	<-done
	cancelled := b.Svc.Stopped("conv-left")
	stopped := make(chan int, 1)
	go func() {
		status, _ := b.stop(t, b.Token, "conv-left")
		stopped <- status
	}()
	select {
	case <-cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the stop request never reached the run")
	}
	close(release)
	require.Equal(t, http.StatusOK, <-stopped)

	_, msgs := b.conversation(t, b.Token, "conv-left")
	require.Len(t, msgs, 2)
	require.Equal(t, "output-error", toolState(t, msgs, "issue-it"))
	require.Equal(t, "output-available", toolState(t, msgs, "slow-read"), "the running call finished")
	require.Contains(t, string(msgs[1]), "Not run: the user stopped the answer")
	require.Zero(t, effects.Load(), "the call that had not started never ran")
	require.EqualValues(t, 1, steps.Load(), "no model step after the stop")
}
