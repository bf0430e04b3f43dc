package steploop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// funcModel is a model provider written inline: faults the fake OpenAI
// server cannot produce (a provider that panics) or timing it cannot
// control.
type funcModel func(ctx context.Context, onText func(string) error) (model.Step, error)

func (f funcModel) Name() string { return "func" }

func (f funcModel) Stream(ctx context.Context, _ model.Request, ev model.Events) (model.Step, error) {
	return f(ctx, ev.Text)
}

// setupWithModel serves the chat routes with model m and run timeout (0:
// the default) and a clerk's token.
func setupWithModel(t *testing.T, m model.Provider, runTimeout time.Duration) *bundle {
	t.Helper()
	return setupWithConfig(t, steploop.Config{Model: m, Limits: steploop.Limits{RunTimeout: runTimeout}})
}

// registryWith is a registry of one tool, name, taking any JSON object.
func registryWith(name string, risk capability.Risk, h func(context.Context, capability.Call) (any, error)) *capability.Registry {
	reg := capability.NewRegistry()
	reg.MustRegister(capability.Capability{
		Descriptor: capability.Descriptor{Name: name, Description: "A test tool.", Risk: risk, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler:    h,
	})
	return reg
}

// setupWithConfig serves the chat routes with cfg, its database, log,
// tools (none, unless given) and frontend tools filled in, and a clerk's
// token.
func setupWithConfig(t testing.TB, cfg steploop.Config) *bundle {
	t.Helper()
	pool := storetest.Pool(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.DB, cfg.Log, cfg.Frontend, cfg.Listener = pool, log, []steploop.FrontendTool{steploop.ShowInvoice}, store.NewListener(pool.Config().ConnConfig, log)
	if cfg.Tools == nil {
		cfg.Tools = capability.NewRegistry()
	}
	svc := startService(t, cfg)
	e := server.New(server.DefaultConfig(), log, func(context.Context) error { return nil })
	chatRoutes(e.Group("/v1", identity.Authenticate(pool, nil, steploop.DefersBearer)), svc)
	srv := httptest.NewServer(openapitest.Wrap(t, e))
	t.Cleanup(srv.Close)
	u, err := identity.UserCreate(context.Background(), pool, identity.UserCreateParams{Username: "clerk", Role: identity.RoleClerk})
	require.NoError(t, err)
	tok, err := identity.TokenCreate(context.Background(), pool, u.ID, "t")
	require.NoError(t, err)
	return &bundle{URL: srv.URL, Pool: pool, Token: tok, Svc: svc}
}

// A panic in the turn outside a tool handler (here the model provider)
// ends the stream with an error chunk and [DONE], what completed stored
// and the conversation released: the next message is answered, not
// CONVERSATION_BUSY for the lease's 10 minutes.
func TestChatPanicInTheTurnEndsItAndReleasesTheConversation(t *testing.T) {
	t.Parallel()
	calls := 0
	b := setupWithModel(t, funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		calls++
		if calls == 1 {
			_ = onText("partial ")
			panic("provider bug")
		}
		_ = onText("ok")
		return model.Step{Text: "ok"}, nil
	}), 0)
	res := b.chat(t, b.Token, body("conv-panic", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, res.Status)
	t.Logf("first response: %q", res.Body)
	require.True(t, res.Done, "the stream ends with [DONE]: %s", res.Body)
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"], "after an error chunk: %s", res.Body)
	require.NotContains(t, string(res.Body), "provider bug", "no panic text reaches the client")
	_, msgs := b.conversation(t, b.Token, "conv-panic")
	res = b.chat(t, b.Token, body("conv-panic", anyList(msgs, userMsg("u2", "again"))...))
	require.Equal(t, http.StatusOK, res.Status, "conversation stuck after a panic: %s", res.Body)
}

// The run's own limit (RunTimeout): a client still connected is told the
// answer stopped (an error chunk, then [DONE]) instead of getting a stream
// that just ends like a complete one.
func TestChatRunLimitEndsWithAnErrorChunk(t *testing.T) {
	t.Parallel()
	b := setupWithModel(t, funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		_ = onText("partial ")
		<-ctx.Done()
		return model.Step{}, ctx.Err()
	}), 300*time.Millisecond)
	res := b.chat(t, b.Token, body("conv-deadline", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, res.Status)
	t.Logf("response: %q", res.Body)
	require.True(t, res.Done, "no terminal chunk and no [DONE] for a client still connected: %v", chunkTypes(res.Chunks))
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"])
}

// A turn acts on its credential for at most CredentialMaxAge: a token
// revoked while the model thinks runs no tool afterwards, and the turn
// ends telling the client why.
func TestChatToolsStopWhenTheCredentialIsRevokedMidTurn(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	reg := registryWith("lookup-thing", capability.RiskRead, func(context.Context, capability.Call) (any, error) {
		ran.Add(1)
		return map[string]any{"ok": true}, nil
	})
	var b *bundle
	steps := 0
	b = setupWithConfig(t, steploop.Config{Tools: reg, CredentialMaxAge: time.Nanosecond,
		Model: funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
			steps++
			switch steps {
			case 1:
				return model.Step{ToolCalls: []model.ToolCall{{ID: "c1", Name: "lookup-thing", Arguments: `{}`}}}, nil
			case 2:
				// The token is revoked while the model decides its next call.
				if err := identity.TokenRevoke(context.Background(), b.Pool, b.Token); err != nil {
					t.Errorf("revoke: %v", err) // not FailNow: this is the server's goroutine
				}
				return model.Step{ToolCalls: []model.ToolCall{{ID: "c2", Name: "lookup-thing", Arguments: `{}`}}}, nil
			default:
				return model.Step{Text: "done"}, nil
			}
		})})
	res := b.chat(t, b.Token, body("conv-revoked", userMsg("u1", "look twice")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, int32(1), ran.Load(), "the call after the revocation did not run")
	require.True(t, res.Done)
	last := res.Chunks[len(res.Chunks)-1]
	require.Equal(t, "error", last["type"])
	require.Contains(t, last["errorText"], "no longer valid")
	require.Equal(t, 2, steps, "no model step after the refusal")
}

// A turn that finds its lease taken when it saves after an effect runs
// nothing more: the record of further effects could not be kept.
func TestChatStopsWhenItsLeaseIsTakenMidTurn(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	var b *bundle
	reg := registryWith("change-thing", capability.RiskConsequential, func(ctx context.Context, _ capability.Call) (any, error) {
		ran.Add(1)
		// Meanwhile the lease expired and another request took it.
		_, err := b.Pool.Exec(ctx, `UPDATE conversations SET busy_token = gen_random_uuid() WHERE id = 'conv-taken'`)
		return map[string]any{"changed": true}, err
	})
	steps := 0
	b = setupWithConfig(t, steploop.Config{Tools: reg,
		Model: funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
			steps++
			if steps <= 2 {
				return model.Step{ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("c%d", steps), Name: "change-thing", Arguments: `{}`}}}, nil
			}
			return model.Step{Text: "done"}, nil
		})})
	res := b.chat(t, b.Token, body("conv-taken", userMsg("u1", "change it twice")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, int32(1), ran.Load(), "no effect after the lease was lost")
	require.Equal(t, 1, steps)
	require.True(t, res.Done)
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"])
}
