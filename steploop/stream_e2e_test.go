package steploop_test

// Stream conformance: a model of the test's own (edgeModel) produces the
// edge cases; the server runs with the production server config
// (server.DefaultConfig, served by e.Server as e.Start does), and the ai@7
// client in e2e/stream.e2e.mjs consumes the real stream, checks every
// chunk against ai@7's schema and compares its messages with
// GET /v1/conversations/{id}.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/e2etest"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// edgeModel answers by keyword in the latest user message with the edge
// cases stream.e2e.mjs walks through (errors and panics mid-text, reused
// tool-call ids, bad arguments, a character split across deltas, …).
type edgeModel struct {
	// slow is how long the "slow" answer streams.
	slow time.Duration
}

// lastUserAfter is the latest user message (lower-cased) and how many
// assistant messages follow it.
func lastUserAfter(req model.Request) (string, int) {
	last, after := "", 0
	for _, m := range req.Messages {
		if m.Role == model.RoleUser {
			last, after = m.Content, 0
		} else if m.Role == model.RoleAssistant {
			after++
		}
	}
	return strings.ToLower(last), after
}

func (p *edgeModel) Name() string { return "edge" }

func (p *edgeModel) Stream(ctx context.Context, req model.Request, ev model.Events) (model.Step, error) {
	onText := ev.Text
	u, after := lastUserAfter(req)
	text := func(parts ...string) (model.Step, error) {
		for _, s := range parts {
			if err := onText(s); err != nil {
				return model.Step{}, err
			}
		}
		return model.Step{Text: strings.Join(parts, ""), FinishReason: "stop"}, nil
	}
	tool := func(calls ...model.ToolCall) (model.Step, error) {
		return model.Step{ToolCalls: calls, FinishReason: "tool_calls"}, nil
	}
	switch {
	case strings.Contains(u, "slow"):
		end := time.Now().Add(p.slow)
		var all strings.Builder
		for time.Now().Before(end) {
			select {
			case <-ctx.Done():
				return model.Step{}, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			all.WriteString("w ")
			if err := onText("w "); err != nil {
				return model.Step{}, err
			}
		}
		return model.Step{Text: all.String(), FinishReason: "stop"}, nil
	case strings.Contains(u, "failmid"):
		_ = onText("partial ")
		_ = onText("text")
		return model.Step{}, errors.New("upstream 500")
	case strings.Contains(u, "panicmid"):
		_ = onText("partial ")
		panic("provider bug")
	case strings.Contains(u, "panictool"):
		if after == 0 {
			return tool(model.ToolCall{ID: "pt1", Name: "lookup-thing", Arguments: `{"key":"a"}`})
		}
		panic("provider bug after a tool")
	case strings.Contains(u, "readtool"):
		if after == 0 {
			return tool(model.ToolCall{ID: "fixed-id", Name: "lookup-thing", Arguments: `{"key":"a"}`})
		}
		return text("Found ", "it.")
	case strings.Contains(u, "dupid"):
		if after == 0 {
			return tool(model.ToolCall{ID: "same", Name: "lookup-thing", Arguments: `{"key":"a"}`},
				model.ToolCall{ID: "same", Name: "lookup-thing", Arguments: `{"key":"b"}`})
		}
		return text("Two.")
	case strings.Contains(u, "badargs"):
		if after == 0 {
			return tool(model.ToolCall{ID: "b1", Name: "lookup-thing", Arguments: `{"key":`},
				model.ToolCall{ID: "b2", Name: "nope-tool", Arguments: `{}`},
				model.ToolCall{ID: "b3", Name: "lookup-thing", Arguments: `[1,2]`})
		}
		return text("Handled.")
	case strings.Contains(u, "approval"):
		if after == 0 {
			return tool(model.ToolCall{ID: "a1", Name: "issue-thing", Arguments: `{"thing":"t1"}`},
				model.ToolCall{ID: "a2", Name: "issue-thing", Arguments: `{"thing":"t1"}`})
		}
		return text("Waiting.")
	case strings.Contains(u, "frontend"):
		if after == 0 {
			_ = onText("Showing. ")
			return model.Step{Text: "Showing. ", FinishReason: "tool_calls", ToolCalls: []model.ToolCall{
				{ID: "r1", Name: "lookup-thing", Arguments: `{"key":"a"}`},
				{ID: "f1", Name: "show-invoice", Arguments: `{"invoice_id":"0190e0a4-8c2b-7cc8-9d7e-5a1f7e2b4c11"}`}}}, nil
		}
		return text("Shown.")
	case strings.Contains(u, "bound"):
		if after == 0 {
			return tool(model.ToolCall{ID: "s1", Name: "send-reminder", Arguments: `{"to":"alice"}`})
		}
		return text("Sent.")
	case strings.Contains(u, "sleeptool"):
		if after == 0 {
			return tool(model.ToolCall{ID: "st1", Name: "sleep-thing", Arguments: `{}`})
		}
		return text("Slept.")
	case strings.Contains(u, "emptydelta"):
		return text("", "x")
	case strings.Contains(u, "nothing"):
		return model.Step{FinishReason: "stop"}, nil
	case strings.Contains(u, "length"):
		s, err := text("cut")
		s.FinishReason = "length"
		return s, err
	case strings.Contains(u, "utf8split"):
		// A provider that splits a multi-byte character across deltas.
		return text("caf\xc3", "\xa9 ok")
	case strings.Contains(u, "weird"):
		return text("a\u2028b</script>\r\nc\t\"q\"\\ ", "emoji 😀")
	}
	return text("Hello ", "there.")
}

// setupConformance serves the chat routes with prov and tools of each kind
// under server config cfg on a real listener (as e.Start does, so cfg's
// timeouts apply), with a clerk's token.
func setupConformance(t *testing.T, prov model.Provider, cfg server.Config) *bundle {
	t.Helper()
	pool := storetest.Pool(t)
	ctx := context.Background()
	reg := capability.NewRegistry()
	reg.MustRegister(
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "lookup-thing", Description: "Look a thing up.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`)},
			Handler: func(ctx context.Context, call capability.Call) (any, error) {
				var in struct{ Key string }
				_ = json.Unmarshal(call.Input, &in)
				return map[string]any{"key": in.Key, "n": 1.50}, nil
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "issue-thing", Description: "Needs approval.", Risk: capability.RiskConsequential,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"thing":{"type":"string"}},"required":["thing"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, call capability.Call) (any, error) {
				return nil, problem.New(http.StatusConflict, "APPROVAL_REQUIRED", "approve first").
					With("approval_id", "appr-1").With("approval_status", "pending").With("target", map[string]any{"type": "thing", "id": "t1"})
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "sleep-thing", Description: "Slow read.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(ctx context.Context, _ capability.Call) (any, error) {
				time.Sleep(800 * time.Millisecond)
				return map[string]any{"slept": true}, nil
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "send-reminder", Description: "Bound.", Risk: capability.RiskBound,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, call capability.Call) (any, error) {
				return map[string]any{"sent": true}, nil
			},
		},
	)
	ctl, err := confirm.NewController(confirm.Config{Registry: confirm.NewPostgres(pool), Mode: confirm.AgentToolset.Confirmations})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := startService(t, steploop.Config{DB: pool, Model: prov, Tools: reg, Frontend: []steploop.FrontendTool{steploop.ShowInvoice}, MaxSteps: 3, Log: log, Confirm: ctl,
		Listener: store.NewListener(pool.Config().ConnConfig, log)})
	e := server.New(cfg, log, func(ctx context.Context) error { return pool.Ping(ctx) })
	v1 := e.Group("/v1", identity.Authenticate(pool, nil, steploop.DefersBearer))
	chatRoutes(v1, svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// As e.Start does: e.Server carries the config's timeouts.
	e.Server.Handler = openapitest.Wrap(t, e)
	go func() { _ = e.Server.Serve(ln) }()
	t.Cleanup(func() { _ = e.Server.Close() })
	u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: "clerk", Role: identity.RoleClerk})
	require.NoError(t, err)
	tok, err := identity.TokenCreate(ctx, pool, u.ID, "test")
	require.NoError(t, err)
	return &bundle{URL: "http://" + ln.Addr().String(), Pool: pool, Token: tok, Svc: svc}
}

// The server's ReadTimeout (15 s in production; 1 s here) bounds reading
// the request, not the streamed answer: a turn that runs longer still ends
// with [DONE].
func TestChatTurnOutlivesTheReadTimeout(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.ReadTimeout = time.Second
	b := setupConformance(t, &edgeModel{slow: 3 * time.Second}, cfg)
	start := time.Now()
	res := b.chat(t, b.Token, body("conf-slow", userMsg("u1", "slow please")))
	require.Equal(t, http.StatusOK, res.Status)
	raw := res.Body
	t.Logf("took %v; ends with [DONE]: %v; has finish: %v; has error: %v", time.Since(start),
		strings.HasSuffix(string(raw), "data: [DONE]\n\n"), strings.Contains(string(raw), `"type":"finish"`), strings.Contains(string(raw), `"type":"error"`))
	require.True(t, strings.HasSuffix(string(raw), "data: [DONE]\n\n"), "stream did not end with [DONE]")
}

// TestChatStreamConformsToTheAISDKClient runs e2e/stream.e2e.mjs (ai@7's
// AbstractChat and chunk schema) against the edge cases; its report is
// logged, and any FAIL line fails the test.
func TestChatStreamConformsToTheAISDKClient(t *testing.T) {
	t.Parallel()
	node, dir := e2etest.Node(t)
	b := setupConformance(t, &edgeModel{slow: 2 * time.Second}, server.DefaultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "stream.e2e.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "INVOICED_URL="+b.URL, "INVOICED_TOKEN="+b.Token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("report:\n%s", stdout.String())
	require.NoError(t, err, "stderr: %s", stderr.String())
	require.NotContains(t, stdout.String(), "FAIL", "see the report above")
}
