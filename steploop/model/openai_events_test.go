package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder is Events that records what arrives, in order.
type recorder struct{ got []string }

func (r *recorder) Text(d string) error      { r.got = append(r.got, "text:"+d); return nil }
func (r *recorder) Reasoning(d string) error { r.got = append(r.got, "reasoning:"+d); return nil }
func (r *recorder) ToolInput(in ToolInput) error {
	if in.Start {
		r.got = append(r.got, fmt.Sprintf("start %d %s %s", in.Index, in.ID, in.Name))
	} else {
		r.got = append(r.got, fmt.Sprintf("args %d %s", in.Index, in.Arguments))
	}
	return nil
}

// The provider asks for usage in the stream and reads the last chunk's
// totals; reasoning (reasoning_content or reasoning) and tool call
// fragments reach Events as they arrive, in order.
func TestOpenAIStreamsReasoningToolInputAndUsage(t *testing.T) {
	t.Parallel()
	var body map[string]any
	h := sse(
		chunk(`{"role":"assistant","content":null,"reasoning_content":"Let me "}`, ""),
		chunk(`{"reasoning":"think."}`, ""),
		chunk(`{"content":"Looking."}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"arguments":"{\"k\""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"lookup","arguments":":1"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"completion_tokens_details":{"reasoning_tokens":3},"prompt_tokens_details":{"cached_tokens":4}}}`,
	)
	p := fakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(raw, &body))
		h(w, r)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rec recorder
	st, err := p.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}, &rec)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
	require.Equal(t, []string{"reasoning:Let me ", "reasoning:think.", "text:Looking.",
		"start 0 call_a lookup", `args 0 {"k":1`, "args 0 }"}, rec.got)
	require.Equal(t, &Usage{InputTokens: 12, OutputTokens: 5, CachedInputTokens: 4, ReasoningTokens: 3}, st.Usage)
	require.Equal(t, []ToolCall{{ID: "call_a", Name: "lookup", Arguments: `{"k":1}`}}, st.ToolCalls)
	require.Equal(t, "Looking.", st.Text, "reasoning is not the answer's text")
	require.Equal(t, "m", p.Name())
}

// Without a usage chunk (an endpoint that ignores include_usage) the step's
// usage is unknown, not zero; NoStreamUsage leaves stream_options out.
func TestOpenAIUsageUnknownAndOptional(t *testing.T) {
	t.Parallel()
	var raw string
	srv := fakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		raw = string(b)
		sse(chunk(`{"content":"hi"}`, "stop"))(w, r)
	})
	st, _, err := stream(t, srv)
	require.NoError(t, err)
	require.Nil(t, st.Usage)

	p, err := NewOpenAI(OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m", NoStreamUsage: true})
	require.NoError(t, err)
	params, err := p.params(Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	b, err := json.Marshal(params)
	require.NoError(t, err)
	require.NotContains(t, string(b), "stream_options")
	require.True(t, strings.Contains(raw, `"include_usage":true`), raw)
}
