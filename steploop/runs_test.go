package steploop_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// Only the owner stops a run: another principal's stop is 204 like a
// conversation with nothing running, and the run goes on to its end.
func TestStopRouteIsTheOwnersOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.leaveMidText(t, "stop-theirs", "tell a slow story")
	status, raw := b.stop(t, b.Other, "stop-theirs")
	require.Equal(t, http.StatusNoContent, status, string(raw))
	status, _ = b.stop(t, b.Token, "stop-unknown")
	require.Equal(t, http.StatusNoContent, status)
	require.Eventually(t, func() bool {
		_, msgs := b.conversation(t, b.Token, "stop-theirs")
		return len(msgs) == 2 && strings.Contains(string(msgs[1]), `"finishReason":"stop"`)
	}, 10*time.Second, 20*time.Millisecond, "the run went on to its end")
}

// A run outlasting its lease keeps it: the heartbeat renews it, so another
// request is CONVERSATION_BUSY for as long as the run lasts.
func TestLeaseIsRenewedWhileTheRunLasts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	reg := registryWith("hold", capability.RiskRead, func(ctx context.Context, _ capability.Call) (any, error) {
		<-release
		return map[string]any{"held": true}, nil
	})
	steps := 0
	b := setupWithConfig(t, steploop.Config{Tools: reg, Limits: steploop.Limits{LeaseTTL: steploop.MinLeaseTTL},
		Model: funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
			steps++
			if steps == 1 {
				return model.Step{FinishReason: "tool_calls", ToolCalls: []model.ToolCall{{ID: "c1", Name: "hold", Arguments: `{}`}}}, nil
			}
			_ = onText("done")
			return model.Step{Text: "done", FinishReason: "stop"}, nil
		})})
	done := make(chan chatResult, 1)
	go func() { done <- b.chat(t, b.Token, body("lease-long", userMsg("u1", "hold on"))) }()
	time.Sleep(3 * steploop.MinLeaseTTL)
	res := b.chat(t, b.Token, map[string]any{"id": "lease-long", "message": userMsg("u2", "are you done?")})
	require.Equal(t, http.StatusConflict, res.Status, "the lease outlived its TTL: %s", res.Body)
	require.Equal(t, steploop.CodeConversationBusy, problemCode(t, res.Body))
	close(release)
	first := <-done
	require.Equal(t, "finish", first.Chunks[len(first.Chunks)-1]["type"], "the run was never cut")
}

// A replica that loses its database mid-run is dead to the others: once
// its lease expires, the sweep stores what its run logged, marked
// interrupted, and frees the conversation; a reader then gets the end.
func TestSweepReapsTheRunOfADeadReplica(t *testing.T) {
	t.Parallel()
	b := setup(t)
	limits := steploop.Limits{LeaseTTL: steploop.MinLeaseTTL}
	dying, err := pgxpool.New(context.Background(), b.Pool.Config().ConnString())
	require.NoError(t, err)
	prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: b.Model.URL + "/v1", APIKey: "k", Model: "fake-model", MaxRetries: -1})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := steploop.New(steploop.Config{DB: dying, Model: prov, Tools: capability.NewRegistry(), Log: log, Limits: limits})
	require.NoError(t, err)
	e := server.New(server.DefaultConfig(), log, func(context.Context) error { return nil })
	chatRoutes(e.Group("/v1", identity.Authenticate(b.Pool, nil, steploop.DefersBearer)), a)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	replicaA := &bundle{URL: srv.URL, Token: b.Token}

	replicaA.leaveMidText(t, "dead-replica", "tell a slow story")
	time.Sleep(100 * time.Millisecond) // some of the answer is logged
	dying.Close()                      // replica A can no longer write or renew its lease

	sweeper := startService(t, steploop.Config{DB: b.Pool, Model: prov, Tools: capability.NewRegistry(), Log: log, Limits: limits})
	require.Eventually(t, func() bool {
		require.NoError(t, sweeper.SweepRuns(context.Background()))
		_, msgs := b.conversation(t, b.Token, "dead-replica")
		return len(msgs) == 2 && strings.Contains(string(msgs[1]), `"finishReason":"interrupted"`)
	}, 10*time.Second, 100*time.Millisecond, "the dead run was reaped")
	_, msgs := b.conversation(t, b.Token, "dead-replica")
	require.Contains(t, string(msgs[1]), `"text":"slow `, "what it streamed is stored")
	replay := b.resume(t, b.Token, "dead-replica")
	require.True(t, replay.Done)
	last := replay.Chunks[len(replay.Chunks)-1]
	require.Equal(t, "error", last["type"])
	require.Contains(t, last["errorText"], "stopped before it finished")
	b.requireReplayIsStored(t, "dead-replica")
	res := b.chat(t, b.Token, map[string]any{"id": "dead-replica", "message": userMsg("u2", "hello?")})
	require.Equal(t, http.StatusOK, res.Status, "the conversation is free: %s", res.Body)
}
