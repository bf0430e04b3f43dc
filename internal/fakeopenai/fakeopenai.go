// Package fakeopenai is an OpenAI-compatible Chat Completions server for
// tests: it streams what a test's answer function says (reasoning, text
// word by word, tool calls in fragments, usage) as a real endpoint does, so
// the service's real openai-go path runs against it.
package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is the part of a Chat Completions request the tests read.
type Request struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// Message is one message of a request.
type Message struct {
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
}

// Text is the message's content as a string ("" for none or parts).
func (m Message) Text() string {
	s, _ := m.Content.(string)
	return s
}

// LastUser is the text of the request's latest user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// Step is how many assistant messages follow the latest user message: 0
// for the first model step of a turn, 1 after one round of tool calls, …
func (r Request) Step() int {
	n := 0
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "user"; i-- {
		if r.Messages[i].Role == "assistant" {
			n++
		}
	}
	return n
}

// ToolResults are the contents of the tool messages after the latest
// assistant message: the results of the calls the model made last.
func (r Request) ToolResults() []string {
	var out []string
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "tool"; i-- {
		out = append([]string{r.Messages[i].Text()}, out...)
	}
	return out
}

// Reply is one model step's answer.
type Reply struct {
	// Reasoning is streamed first, as reasoning_content deltas.
	Reasoning string
	// Text is streamed a word at a time, WordDelay apart.
	Text      string
	WordDelay time.Duration
	// ToolCalls follow the text, each call's arguments in two fragments,
	// or in fragments of ArgChunk bytes ArgDelay apart when ArgChunk is
	// set (a long call a page shows being drafted).
	ToolCalls []ToolCall
	ArgChunk  int
	ArgDelay  time.Duration
	// OnCancel is called when the client goes away during a delay,
	// before the reply's end.
	OnCancel func()
	// Error, when set, refuses the request instead: 400 with an OpenAI
	// error body whose message is Error, as an endpoint answers a request
	// it cannot serve.
	Error string
}

// ToolCall is a call the model makes; Arguments is its JSON text.
type ToolCall struct {
	Name      string
	Arguments string
}

// Server is a running fake endpoint; its base URL for openai-go is
// URL + "/v1".
type Server struct {
	URL      string
	answer   func(Request) Reply
	mu       sync.Mutex
	requests []Request
	calls    int
}

// New starts a fake endpoint answering each request with answer; it stops
// when the test ends.
func New(t testing.TB, answer func(Request) Reply) *Server {
	t.Helper()
	s := &Server{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests are the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ToolResults are the results the model was sent for the call with
// toolCallID, in the last request that carried any (each request repeats
// the history, so earlier requests hold the same ones).
func (s *Server) ToolResults(toolCallID string) []string {
	var found []string
	for _, r := range s.Requests() {
		var here []string
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == toolCallID {
				here = append(here, m.Text())
			}
		}
		if len(here) > 0 {
			found = here
		}
	}
	return found
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	reply := s.answer(req)
	if reply.Error != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": reply.Error, "type": "invalid_request_error"}})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	st := &stream{w: w, fl: w.(http.Flusher), model: req.Model}
	st.delta(map[string]any{"role": "assistant", "content": ""}, nil)
	if reply.Reasoning != "" {
		st.delta(map[string]any{"reasoning_content": reply.Reasoning}, nil)
	}
	for _, word := range strings.SplitAfter(reply.Text, " ") {
		if word == "" {
			continue
		}
		if !sleep(r, reply.WordDelay) {
			cancelled(reply)
			return
		}
		st.delta(map[string]any{"content": word}, nil)
	}
	for i, tc := range reply.ToolCalls {
		frags := fragments(tc.Arguments, reply.ArgChunk)
		st.delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": s.callID(), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": frags[0]}}}}, nil)
		for _, f := range frags[1:] {
			if !sleep(r, reply.ArgDelay) {
				cancelled(reply)
				return
			}
			st.delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": f}}}}, nil)
		}
	}
	reason := "stop"
	if len(reply.ToolCalls) > 0 {
		reason = "tool_calls"
	}
	st.delta(map[string]any{}, reason)
	if req.StreamOptions.IncludeUsage {
		// 10 input tokens per message, 5 output tokens, 1 of the input
		// cached and 2 of the output reasoning: every figure a page or a
		// metric shows is there, each distinct.
		st.send(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 10 * len(req.Messages), "completion_tokens": 5, "total_tokens": 10*len(req.Messages) + 5,
				"completion_tokens_details": map[string]any{"reasoning_tokens": 2}, "prompt_tokens_details": map[string]any{"cached_tokens": 1}}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	st.fl.Flush()
}

// fragments splits arguments in two, or in pieces of size bytes.
func fragments(arguments string, size int) []string {
	if size <= 0 {
		half := len(arguments) / 2
		return []string{arguments[:half], arguments[half:]}
	}
	var out []string
	for len(arguments) > size {
		out = append(out, arguments[:size])
		arguments = arguments[size:]
	}
	return append(out, arguments)
}

func cancelled(reply Reply) {
	if reply.OnCancel != nil {
		reply.OnCancel()
	}
}

// sleep waits d, or less when the client goes away (false then).
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-r.Context().Done():
		return false
	case <-time.After(d):
		return true
	}
}

func (s *Server) callID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return fmt.Sprintf("call_%d", s.calls)
}

type stream struct {
	w     http.ResponseWriter
	fl    http.Flusher
	model string
}

func (st *stream) send(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(st.w, "data: %s\n\n", b)
	st.fl.Flush()
}

func (st *stream) delta(d map[string]any, finish any) {
	st.send(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": st.model,
		"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}})
}
