package steploop_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// A tool handler that panics ends its call as a tool error with a safe
// message, like any other failure: left unanswered in the transcript, a
// server tool's call would block the conversation for good.
func TestChatToolPanicIsAToolErrorAndTheConversationGoesOn(t *testing.T) {
	t.Parallel()
	pool := storetest.Pool(t)
	ctx := context.Background()
	reg := capability.NewRegistry()
	reg.MustRegister(capability.Capability{
		Descriptor: capability.Descriptor{Name: "boom", Description: "Has a bug.", Risk: capability.RiskRead,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, capability.Call) (any, error) {
			var m map[string]int
			m["x"] = 1 // nil map write: a handler bug
			return nil, nil
		},
	})
	sc, err := model.NewScripted(model.Script{Rules: []model.ScriptRule{{Match: "boom", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "boom", Input: json.RawMessage(`{}`)}}},
		{Text: "Done."},
	}}}, Default: []model.ScriptStep{{Text: "Hello."}}})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := steploop.New(steploop.Config{DB: pool, Model: sc, Tools: reg, Frontend: []steploop.FrontendTool{steploop.ShowInvoice}, Log: log})
	require.NoError(t, err)
	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	chatRoutes(e.Group("/v1", identity.Authenticate(pool, nil)), svc)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: "clerk", Role: identity.RoleClerk})
	require.NoError(t, err)
	tok, err := identity.TokenCreate(ctx, pool, u.ID, "test")
	require.NoError(t, err)
	b := &bundle{URL: srv.URL}

	res := b.chat(t, tok, body("conv-boom", userMsg("u1", "boom please")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.True(t, res.Done)
	require.Contains(t, chunkTypes(res.Chunks), "tool-output-error")
	require.NotContains(t, string(res.Body), "nil map", "no panic text reaches the client")
	require.Contains(t, string(res.Body), `"delta":"Done."`, "the model read the error and answered")
	status, msgs := b.conversation(t, tok, "conv-boom")
	require.Equal(t, http.StatusOK, status)

	res = b.chat(t, tok, body("conv-boom", anyList(msgs, userMsg("u2", "hello again"))...))
	require.Equal(t, http.StatusOK, res.Status, "the conversation goes on after a tool panic: %s\nstored: %s", res.Body, msgs[len(msgs)-1])
}
