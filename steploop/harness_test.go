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
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
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

// slowText is streamed word by word with a pause, for cancellation and
// busy tests.
var slowText = strings.Repeat("slow ", 200)

// fakeModel is an OpenAI-compatible Chat Completions server that streams
// scripted chunks, so the real openai-go path runs.
type fakeModel struct {
	srv       *httptest.Server
	scripted  *model.Scripted
	mu        sync.Mutex
	requests  []openAIRequest
	cancelled chan struct{}
	started   chan struct{}
	fail      bool
}

type openAIRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func newFakeModel(t *testing.T) *fakeModel { return newFakeModelWith(t, script) }

// newFakeModelWith is a fake model server answering from sc.
func newFakeModelWith(t *testing.T, sc model.Script) *fakeModel {
	t.Helper()
	scripted, err := model.NewScripted(sc)
	require.NoError(t, err)
	f := &fakeModel{scripted: scripted, cancelled: make(chan struct{}, 16), started: make(chan struct{}, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) Requests() []openAIRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]openAIRequest(nil), f.requests...)
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	var req openAIRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	fail := f.fail
	f.mu.Unlock()
	if fail {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"secret internal detail","type":"invalid_request_error"}}`)
		return
	}
	var msgs []model.Message
	lastUser := ""
	for _, m := range req.Messages {
		content, _ := m.Content.(string)
		switch m.Role {
		case "user":
			msgs = append(msgs, model.Message{Role: model.RoleUser, Content: content})
			lastUser = content
		case "assistant":
			msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: content})
		case "tool":
			msgs = append(msgs, model.Message{Role: model.RoleTool, Content: content, ToolCallID: m.ToolCallID})
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	delta := func(d map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}, nil))
	if strings.Contains(lastUser, "slow") {
		f.started <- struct{}{}
		for _, word := range strings.SplitAfter(slowText, " ") {
			select {
			case <-r.Context().Done():
				f.cancelled <- struct{}{}
				return
			case <-timeAfter():
			}
			send(delta(map[string]any{"content": word}, nil))
		}
		send(delta(map[string]any{}, "stop"))
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	step, err := f.scripted.Stream(r.Context(), model.Request{Messages: msgs}, func(d string) error {
		send(delta(map[string]any{"content": d}, nil))
		return nil
	})
	if err != nil {
		return
	}
	for i, tc := range step.ToolCalls {
		// Split the arguments in two fragments, as real servers do.
		half := len(tc.Arguments) / 2
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments[:half]}}}}, nil))
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i,
			"function": map[string]any{"arguments": tc.Arguments[half:]}}}}, nil))
	}
	reason := "stop"
	if len(step.ToolCalls) > 0 {
		reason = "tool_calls"
	}
	send(delta(map[string]any{}, reason))
	fmt.Fprint(w, "data: [DONE]\n\n")
}

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
	prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: fm.srv.URL + "/v1", APIKey: "test-key", Model: "fake-model", MaxRetries: -1})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := steploop.New(steploop.Config{
		DB: pool, Model: prov, Tools: reg, Frontend: []steploop.FrontendTool{steploop.ShowInvoice},
		Confirm: ctl, MaxSteps: 3, Log: log,
	})
	require.NoError(t, err)

	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	v1 := e.Group("/v1", identity.Authenticate(pool, nil))
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

// chatRoutes adds the step loop's routes to g as app's route table does;
// the harness serves them over its own capability registry, not app's.
func chatRoutes(g *echo.Group, svc *steploop.Service) {
	g.POST("/chat", svc.Chat)
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
	buf, err := json.Marshal(body)
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

func timeAfter() <-chan time.Time { return time.After(5 * time.Millisecond) }
