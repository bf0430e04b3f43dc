package steploop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// blockingTool is a read tool that reports when it starts and when its
// context ends (or gives up after 6 s).
type blockingTool struct {
	started  chan struct{}
	ctxDone  chan time.Duration // how long after starting ctx ended
	gaveUp   atomic.Bool
	startedA time.Time
}

func newBlockingTool() *blockingTool {
	return &blockingTool{started: make(chan struct{}, 1), ctxDone: make(chan time.Duration, 1)}
}

func (z *blockingTool) handler(ctx context.Context, _ capability.Call) (any, error) {
	start := time.Now()
	z.started <- struct{}{}
	select {
	case <-ctx.Done():
		z.ctxDone <- time.Since(start)
		return nil, ctx.Err()
	case <-time.After(6 * time.Second):
		z.gaveUp.Store(true)
		return map[string]any{"gave_up": true}, nil
	}
}

func blockThenText() funcModel {
	var steps atomic.Int32
	return funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		if steps.Add(1) == 1 {
			return model.Step{FinishReason: "tool_calls", ToolCalls: []model.ToolCall{{ID: "c1", Name: "block", Arguments: `{}`}}}, nil
		}
		_ = onText("done")
		return model.Step{Text: "done", FinishReason: "stop"}, nil
	})
}

// A tool that started before its client left still ends at the run's own
// limit (RunTimeout): otherwise it could run forever.
func TestChatToolWhoseClientLeftStillEndsAtTheRunLimit(t *testing.T) {
	t.Parallel()
	tool := newBlockingTool()
	reg := registryWith("block", capability.RiskRead, tool.handler)
	b := setupWithConfig(t, steploop.Config{Tools: reg, Model: blockThenText(), Limits: steploop.Limits{RunTimeout: time.Second}})

	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = b.post(ctx, "shut-deadline", userMsg("u1", "go")) }()
	<-tool.started
	cancel() // the client leaves while the tool runs

	select {
	case d := <-tool.ctxDone:
		t.Logf("tool context ended %v after the tool started", d)
		require.Less(t, d, 2*time.Second)
	case <-time.After(4 * time.Second):
		t.Fatalf("the run's limit (1 s) never reached a tool once its client had left")
	}
}

// Shutdown ends any running tool, one whose client already left too:
// otherwise it would hold the grace period.
func TestChatShutdownReachesAToolWhoseClientLeft(t *testing.T) {
	t.Parallel()
	tool := newBlockingTool()
	reg := registryWith("block", capability.RiskRead, tool.handler)
	b := setupWithConfig(t, steploop.Config{Tools: reg, Model: blockThenText()})
	svc := b.Svc

	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = b.post(ctx, "shut-shut-left", userMsg("u1", "go")) }()
	<-tool.started
	cancel()
	time.Sleep(200 * time.Millisecond) // the server sees the connection close
	svc.Shutdown()

	select {
	case d := <-tool.ctxDone:
		t.Logf("tool context ended %v after the tool started", d)
	case <-time.After(3 * time.Second):
		t.Fatalf("Shutdown did not reach a running tool whose client had left")
	}
}

// requireRestartError checks that res, a chat a shutdown cut, ended
// telling its client the server is restarting, then [DONE].
func requireRestartError(t *testing.T, res chatResult) {
	t.Helper()
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.True(t, res.Done, "%v", chunkTypes(res.Chunks))
	last := res.Chunks[len(res.Chunks)-1]
	require.Equal(t, "error", last["type"], "%v", res.Chunks)
	require.Contains(t, last["errorText"], "restarting")
}

// chatWithin posts msgs to conversation id and reads the whole answer,
// failing unless it ends within the given time.
func (b *bundle) chatWithin(t *testing.T, id string, within time.Duration, msgs ...any) chatResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	buf, err := json.Marshal(body(id, msgs...))
	require.NoError(t, err)
	return b.chatRaw(ctx, t, b.Token, "application/json", buf)
}

// Shutdown while the model thinks: a client still reading gets the
// restart error and [DONE].
func TestChatShutdownDuringAModelStepTellsTheClient(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	m := funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		_ = onText("partial \xe2\x82") // a split character held back
		started <- struct{}{}
		<-ctx.Done()
		return model.Step{}, ctx.Err()
	})
	b := setupWithConfig(t, steploop.Config{Model: m})
	svc := b.Svc
	go func() { <-started; svc.Shutdown() }()
	res := b.chatWithin(t, "shut-shut-model", 5*time.Second, userMsg("u1", "hi"))
	requireRestartError(t, res)
	_, msgs := b.conversation(t, b.Token, "shut-shut-model")
	require.Len(t, msgs, 2)
	require.Contains(t, string(msgs[1]), `"state":"done"`, string(msgs[1]))
	require.Contains(t, string(msgs[1]), "partial \uFFFD", string(msgs[1]))
}

// Shutdown twice, then a chat after it: no panic, the chat ends at once
// with the restart error and the conversation is released and consistent.
func TestChatAfterShutdownEndsAtOnceAndReleases(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	m := funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		calls.Add(1)
		select {
		case <-ctx.Done():
			return model.Step{}, ctx.Err()
		case <-time.After(3 * time.Second):
			_ = onText("late")
			return model.Step{Text: "late", FinishReason: "stop"}, nil
		}
	})
	b := setupWithConfig(t, steploop.Config{Model: m})
	svc := b.Svc
	svc.Shutdown()
	svc.Shutdown()
	start := time.Now()
	res := b.chatWithin(t, "shut-after", 5*time.Second, userMsg("u1", "hi"))
	require.Less(t, time.Since(start), 2*time.Second)
	requireRestartError(t, res)
	var busy int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM conversations WHERE id = 'shut-after' AND busy_token IS NOT NULL`).Scan(&busy))
	require.Zero(t, busy, "conversation left leased")
}

// Shutdown while a tool runs with the client reading: the stream ends
// with the restart error, and the cut call is recorded as interrupted
// with its outcome unknown, not as a failure (pgx may report the
// cancellation while PostgreSQL commits).
func TestChatShutdownDuringAToolRecordsItAsInterrupted(t *testing.T) {
	t.Parallel()
	tool := newBlockingTool()
	reg := registryWith("block", capability.RiskRead, tool.handler)
	b := setupWithConfig(t, steploop.Config{Tools: reg, Model: blockThenText()})
	svc := b.Svc
	go func() { <-tool.started; svc.Shutdown() }()
	res := b.chatWithin(t, "shut-shut-tool", 5*time.Second, userMsg("u1", "go"))
	requireRestartError(t, res)
	var toolErr string
	for _, c := range res.Chunks {
		if c["type"] == "tool-output-error" {
			toolErr, _ = c["errorText"].(string)
		}
	}
	t.Logf("tool error recorded: %q", toolErr)
	require.Contains(t, toolErr, "whether it took effect is unknown")
}
