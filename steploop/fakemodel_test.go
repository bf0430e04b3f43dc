package steploop_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

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
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
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
	step, err := f.scripted.Stream(r.Context(), model.Request{Messages: msgs}, fakeEvents{send: func(field, d string) {
		send(delta(map[string]any{field: d}, nil))
	}})
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
	if req.StreamOptions.IncludeUsage {
		send(usageChunk(req))
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// usageChunk is the usage the fake reports for req, as OpenAI sends it:
// one last chunk without choices; 10 input tokens per message, 5 output
// tokens, 1 cached and 2 reasoning.
func usageChunk(req openAIRequest) map[string]any {
	return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 10 * len(req.Messages), "completion_tokens": 5, "total_tokens": 10*len(req.Messages) + 5,
			"completion_tokens_details": map[string]any{"reasoning_tokens": 2}, "prompt_tokens_details": map[string]any{"cached_tokens": 1}}}
}

// fakeEvents sends a scripted step's text as content deltas and its
// reasoning as reasoning_content deltas, as DeepSeek and llama.cpp do; its
// tool calls are sent afterwards, in fragments.
type fakeEvents struct{ send func(field, delta string) }

func (e fakeEvents) Text(d string) error             { e.send("content", d); return nil }
func (e fakeEvents) Reasoning(d string) error        { e.send("reasoning_content", d); return nil }
func (e fakeEvents) ToolInput(model.ToolInput) error { return nil }
