package steploop_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// funcModel is a model provider written inline: faults the fake OpenAI
// server cannot produce (a provider that panics) or timing it cannot
// control.
type funcModel func(ctx context.Context, onText func(string) error) (model.Step, error)

func (f funcModel) Stream(ctx context.Context, _ model.Request, onText func(string) error) (model.Step, error) {
	return f(ctx, onText)
}

// setupWithModel serves the chat routes with model m and lease ttl (0:
// the default) and a clerk's token.
func setupWithModel(t *testing.T, m model.Provider, ttl time.Duration) *bundle {
	t.Helper()
	pool := storetest.Pool(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := steploop.New(steploop.Config{DB: pool, Model: m, Tools: capability.NewRegistry(),
		Frontend: []steploop.FrontendTool{steploop.ShowInvoice}, Log: log, LeaseTTL: ttl})
	require.NoError(t, err)
	e := server.New(server.DefaultConfig(), log, func(context.Context) error { return nil })
	chatRoutes(e.Group("/v1", identity.Authenticate(pool, nil)), svc)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	u, err := identity.UserCreate(context.Background(), pool, identity.UserCreateParams{Username: "clerk", Role: identity.RoleClerk})
	require.NoError(t, err)
	tok, err := identity.TokenCreate(context.Background(), pool, u.ID, "t")
	require.NoError(t, err)
	return &bundle{URL: srv.URL, Token: tok}
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

// The run's own limit (LeaseTTL − 30 s) is not the client going away: a
// client still connected is told the answer stopped (an error chunk, then
// [DONE]) instead of getting a stream that just ends like a complete one.
func TestChatRunLimitEndsWithAnErrorChunk(t *testing.T) {
	t.Parallel()
	b := setupWithModel(t, funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		_ = onText("partial ")
		<-ctx.Done()
		return model.Step{}, ctx.Err()
	}), 30*time.Second+300*time.Millisecond)
	res := b.chat(t, b.Token, body("conv-deadline", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, res.Status)
	t.Logf("response: %q", res.Body)
	require.True(t, res.Done, "no terminal chunk and no [DONE] for a client still connected: %v", chunkTypes(res.Chunks))
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"])
}
