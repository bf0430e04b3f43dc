package model

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func fakeProvider(t *testing.T, h http.HandlerFunc) *OpenAI {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "m", MaxRetries: -1})
	require.NoError(t, err)
	return p
}

// A stream cut off before its finish_reason and [DONE] (proxy timeout,
// model server crash, connection reset) must not be taken for a complete
// answer.
func TestOpenAICutOffStreamIsAnError(t *testing.T) {
	t.Parallel()
	p := fakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Invoice INV-1 is approved and will be iss"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"issue-invoice","arguments":"{\"invoice_id\":\"0190"}}]}}]}`+"\n\n")
		// connection ends here: no finish_reason, no [DONE]
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	step, err := p.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}, TextOnly(func(string) error { return nil }))
	require.Error(t, err, "truncated stream accepted as a complete step: %+v", step)
}

// A 200 answer that is not an event stream (a server ignoring stream=true,
// or a proxy's HTML page) must not become an empty, successful step.
func TestOpenAINonStreamAnswerIsAnError(t *testing.T) {
	t.Parallel()
	p := fakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Here are your invoices."},"finish_reason":"stop"}]}`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	step, err := p.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}, TextOnly(func(string) error { return nil }))
	require.Error(t, err, "non-SSE body accepted as an empty step: %+v", step)
}

// An endpoint that stops sending (before its first token or between two)
// ends the step after IdleTimeout with an error naming the setting,
// instead of holding the conversation for the request's whole deadline.
func TestOpenAIIdleEndpointTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Thinking"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	p, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "m", MaxRetries: -1, IdleTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	var got string
	_, err = p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}, TextOnly(func(d string) error { got += d; return nil }))
	require.ErrorContains(t, err, "INVOICED_MODEL_IDLE_TIMEOUT")
	require.Equal(t, "Thinking", got, "what arrived was streamed")
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestModelIdleTimeoutSettingIsChecked(t *testing.T) {
	t.Parallel()
	get := func(v string) func(string) string {
		return func(k string) string {
			return map[string]string{"INVOICED_MODEL_PROVIDER": "openai", "INVOICED_MODEL_NAME": "m", "INVOICED_MODEL_BASE_URL": "http://127.0.0.1:11434/v1", "INVOICED_MODEL_IDLE_TIMEOUT": v}[k]
		}
	}
	_, err := FromSettings(get("soon"))
	require.ErrorContains(t, err, "INVOICED_MODEL_IDLE_TIMEOUT")
	p, err := FromSettings(get("90s"))
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, p.(*OpenAI).idle)
	p, err = FromSettings(get(""))
	require.NoError(t, err)
	require.Equal(t, DefaultIdleTimeout, p.(*OpenAI).idle)
}
