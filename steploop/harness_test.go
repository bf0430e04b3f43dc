package steploop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// script is what the fake OpenAI-compatible server answers, keyed by the
// latest user message (model.Script semantics).
var script = model.Script{Rules: []model.ScriptRule{
	{Match: "look up", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "lookup-thing", Input: json.RawMessage(`{"key":"alpha"}`)}}},
		{Text: "Found alpha."},
	}},
	{Match: "remind", Steps: []model.ScriptStep{
		{Text: "Sending it. ", ToolCalls: []model.ScriptToolCall{{Name: "send-reminder", Input: json.RawMessage(`{"to":"alice"}`)}}},
		{Text: "Done with the reminder."},
	}},
	{Match: "issue", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "issue-thing", Input: json.RawMessage(`{"thing":"t1"}`)}}},
		{Text: "Issue handled."},
	}},
	{Match: "show", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "show-invoice", Input: json.RawMessage(`{"invoice_id":"0190e0a4-8c2b-7cc8-9d7e-5a1f7e2b4c11"}`)}}},
		{Text: "It is on your screen."},
	}},
	{Match: "loop", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "lookup-thing", Input: json.RawMessage(`{"key":"1"}`)}}},
		{ToolCalls: []model.ScriptToolCall{{Name: "lookup-thing", Input: json.RawMessage(`{"key":"2"}`)}}},
		{ToolCalls: []model.ScriptToolCall{{Name: "lookup-thing", Input: json.RawMessage(`{"key":"3"}`)}}},
		{Text: "Looped."},
	}},
	// A tool may answer with text PostgreSQL cannot store (U+0000):
	// lookup-thing does for the key "unstorable".
	{Match: "unstorable", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "lookup-thing", Input: json.RawMessage(`{"key":"unstorable"}`)}}},
		{Text: "Never stored."},
	}},
	{Match: "boom", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "boom", Input: json.RawMessage(`{}`)}}},
		{Text: "Done."},
	}},
	{Match: "wait", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "wait-thing", Input: json.RawMessage(`{}`)}}},
		{Text: "Waited."},
	}},
	{Match: "broken", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "lookup-thing", Input: json.RawMessage(`{"nope":1}`)}, {Name: "explode", Input: json.RawMessage(`{}`)}, {Name: "no-such-tool"}}},
		{Text: "Recovered."},
	}},
}, Default: []model.ScriptStep{{Text: "Hello there."}}}

// fakeApprovals is the least of an approvals gate, for the loop's own
// tests: a consequential capability answers APPROVAL_REQUIRED, one request
// per thing. The e2e test, app_test.go and gates_app_test.go use the real
// gate and REST API.
type fakeApprovals struct {
	mu      sync.Mutex
	byThing map[string]string // thing → approval id
}

// bundle is one test's running service.
type bundle struct {
	URL       string
	Pool      *pgxpool.Pool
	Token     string
	Other     string // another principal's token
	Model     *fakeModel
	mu        sync.Mutex
	reminders map[string]int
	approvals *fakeApprovals
	// Svc is the service, where a test built it (setupWithConfig).
	Svc *steploop.Service
	// release lets wait-thing return; it gives up after 5 s.
	release chan struct{}
	// Mode is how chat sends a message list (requestModes): as given, or
	// as a client whose prepareSendMessagesRequest sends the last message
	// only ("last message").
	Mode string
}

// The two request modes of POST /v1/chat: the whole message list (ai@7's
// default body), or the last message only ({id, message}).
const (
	fullHistory = "full history"
	lastMessage = "last message"
)

var requestModes = []string{fullHistory, lastMessage}

// envelope is body as b.Mode sends it. A last-message client sends one
// message: the first of the list that differs from the stored transcript
// (what the client changed or adds), or else the last.
func (b *bundle) envelope(t *testing.T, token string, body any) any {
	t.Helper()
	m, ok := body.(map[string]any)
	if b.Mode != lastMessage || !ok {
		return body
	}
	list, _ := m["messages"].([]any)
	if len(list) == 0 {
		return body
	}
	id := m["id"].(string)
	_, stored := b.conversation(t, token, id)
	for i, msg := range list {
		raw, err := json.Marshal(msg)
		require.NoError(t, err)
		if i >= len(stored) || !jsondoc.Equal(raw, stored[i]) {
			return map[string]any{"id": id, "message": msg}
		}
	}
	return map[string]any{"id": id, "message": list[len(list)-1]}
}

func (b *bundle) Reminders(to string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reminders[to]
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool := storetest.Pool(t)
	ctx := context.Background()
	fm := newFakeModel(t)
	b := &bundle{Model: fm, reminders: map[string]int{}, approvals: &fakeApprovals{byThing: map[string]string{}},
		release: make(chan struct{})}
	b.Pool = pool

	reg := capability.NewRegistry()
	reg.MustRegister(
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "lookup-thing", Description: "Look a thing up.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`)},
			Handler: func(ctx context.Context, call capability.Call) (any, error) {
				var in struct{ Key string }
				_ = json.Unmarshal(call.Input, &in)
				value := "v-" + in.Key
				if in.Key == "unstorable" {
					value = "a\x00b"
				}
				return map[string]any{"key": in.Key, "value": value, "principal": call.Principal.Username}, nil
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "wait-thing", Description: "Waits until the test releases it.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(ctx context.Context, _ capability.Call) (any, error) {
				select {
				case <-b.release:
					return map[string]any{"waited": true}, nil
				case <-time.After(5 * time.Second):
					return nil, problem.New(http.StatusGatewayTimeout, "NOT_RELEASED", "the test never released wait-thing")
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "boom", Description: "Has a bug.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(context.Context, capability.Call) (any, error) {
				var m map[string]int
				m["x"] = 1 // nil map write: a handler bug that panics
				return nil, nil
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "explode", Description: "Always fails.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(context.Context, capability.Call) (any, error) {
				return nil, fmt.Errorf("pq: password authentication failed for secret-user at 10.0.0.7")
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "send-reminder", Description: "Send a payment reminder.", Risk: capability.RiskBound,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, call capability.Call) (any, error) {
				var in struct{ To string }
				_ = json.Unmarshal(call.Input, &in)
				b.mu.Lock()
				b.reminders[in.To]++
				b.mu.Unlock()
				return map[string]any{"sent_to": in.To}, nil
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "issue-thing", Description: "Issue a thing (needs approval).", Risk: capability.RiskConsequential,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"thing":{"type":"string"}},"required":["thing"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, call capability.Call) (any, error) {
				var in struct{ Thing string }
				_ = json.Unmarshal(call.Input, &in)
				a := b.approvals
				a.mu.Lock()
				defer a.mu.Unlock()
				id, ok := a.byThing[in.Thing]
				if !ok {
					id = uuid.NewString()
					a.byThing[in.Thing] = id
				}
				return nil, problem.New(http.StatusConflict, "APPROVAL_REQUIRED", "an approver must approve this first").
					With("approval_id", id).With("approval_status", "pending").With("target", map[string]any{"type": "thing", "id": in.Thing})
			},
		},
	)
	ctl, err := confirm.NewController(confirm.Config{Registry: confirm.NewPostgres(pool), Mode: confirm.AgentToolset.Confirmations})
	require.NoError(t, err)
	prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: fm.URL + "/v1", APIKey: "test-key", Model: "fake-model", MaxRetries: -1})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := startService(t, steploop.Config{
		DB: pool, Model: prov, Tools: reg, Frontend: []steploop.FrontendTool{steploop.ShowInvoice},
		Confirm: ctl, MaxSteps: 3, Log: log, Listener: store.NewListener(pool.Config().ConnConfig, log),
	})
	b.Svc = svc

	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	v1 := e.Group("/v1", identity.Authenticate(pool, nil, steploop.DefersBearer))
	chatRoutes(v1, svc)
	srv := httptest.NewServer(openapitest.Wrap(t, e))
	t.Cleanup(srv.Close)
	b.URL = srv.URL

	for i, name := range []string{"clerk", "other"} {
		u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: identity.RoleClerk})
		require.NoError(t, err)
		tok, err := identity.TokenCreate(ctx, pool, u.ID, "test")
		require.NoError(t, err)
		if i == 0 {
			b.Token = tok
		} else {
			b.Other = tok
		}
	}
	return b
}

// startService builds the step loop from cfg and starts its listener
// (when cfg.Listener is set) for the test's duration.
func startService(t testing.TB, cfg steploop.Config) *steploop.Service {
	t.Helper()
	svc, err := steploop.New(cfg)
	require.NoError(t, err)
	if cfg.Listener != nil {
		require.NoError(t, cfg.Listener.Start(context.Background()))
		t.Cleanup(cfg.Listener.Close)
	}
	return svc
}

// chatRoutes adds the step loop's routes to g as app's route table does;
// the harness serves them over its own capability registry, not app's.
func chatRoutes(g *echo.Group, svc *steploop.Service) {
	g.POST("/chat", svc.Chat)
	g.GET("/chat/:id/stream", svc.Resume)
	g.POST("/chat/:id/stop", svc.Stop)
	g.GET("/conversations", svc.ConversationList)
	g.GET("/conversations/:id", svc.ConversationGet)
}

// chatResult is a finished POST /v1/chat.
type chatResult struct {
	Status int
	Header http.Header
	Body   []byte
	Chunks []map[string]any
	Done   bool
}

func (b *bundle) chat(t *testing.T, token string, body any) chatResult {
	t.Helper()
	buf, err := json.Marshal(b.envelope(t, token, body))
	require.NoError(t, err)
	return b.chatRaw(context.Background(), t, token, "application/json", buf)
}

// chatRaw posts raw as the body of POST /v1/chat with Content-Type ctype
// ("" for none) under ctx, and reads the whole answer.
func (b *bundle) chatRaw(ctx context.Context, t *testing.T, token, ctype string, raw []byte) chatResult {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+"/v1/chat", bytes.NewReader(raw))
	require.NoError(t, err)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the answer was not read whole: %s", out)
	res := chatResult{Status: resp.StatusCode, Header: resp.Header, Body: out}
	if resp.StatusCode == http.StatusOK {
		res.Chunks, res.Done = parseSSE(t, out)
	}
	return res
}

func parseSSE(t *testing.T, raw []byte) ([]map[string]any, bool) {
	t.Helper()
	var (
		chunks []map[string]any
		done   bool
	)
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		require.True(t, strings.HasPrefix(line, "data: "), "SSE line %q", line)
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &c))
		chunks = append(chunks, c)
	}
	return chunks, done
}

func (b *bundle) conversation(t *testing.T, token, id string) (int, []json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.URL+"/v1/conversations/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	}
	return resp.StatusCode, v.Messages
}

func userMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

func body(id string, msgs ...any) map[string]any {
	return map[string]any{"id": id, "messages": msgs, "trigger": "submit-message"}
}

func chunkTypes(cs []map[string]any) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c["type"].(string))
	}
	return out
}

func problemCode(t *testing.T, raw []byte) string {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal(raw, &p), string(raw))
	code, _ := p["code"].(string)
	return code
}

// mustString is the JSON text of raw's string member key, quoted.
func mustString(t *testing.T, raw []byte, key string) string {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	s, ok := v[key].(string)
	require.True(t, ok, "%s has no string %q", raw, key)
	b, _ := json.Marshal(s)
	return string(b)
}

// otherClerk is a token of another clerk on b's database.
func (b *bundle) otherClerk(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	u, err := identity.UserCreate(ctx, b.Pool, identity.UserCreateParams{Username: "other-" + uuid.NewString()[:8], Role: identity.RoleClerk})
	require.NoError(t, err)
	tok, err := identity.TokenCreate(ctx, b.Pool, u.ID, "test")
	require.NoError(t, err)
	return tok
}
