package model

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// What OpenAI-compatible servers really send, beyond OpenAI's own stream.

// sse answers with chunks as SSE events, then [DONE].
func sse(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprint(w, "data: "+c+"\n\n")
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// chunk is a chat.completion.chunk with delta and finish_reason ("": null).
func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// stream runs one step of p and returns it with the text it streamed.
func stream(t *testing.T, p *OpenAI) (Step, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got strings.Builder
	st, err := p.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}, TextOnly(func(d string) error { got.WriteString(d); return nil }))
	return st, got.String(), err
}

func TestOpenAIToolCallFragmentsAsServersSendThem(t *testing.T) {
	t.Parallel()
	t.Run("the name repeated on every fragment", func(t *testing.T) {
		t.Parallel()
		p := fakeProvider(t, sse(
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"list-invoices","arguments":"{\"status\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"list-invoices","arguments":"\"issued\"}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		))
		st, _, err := stream(t, p)
		require.NoError(t, err)
		require.Equal(t, []ToolCall{{ID: "call_a", Name: "list-invoices", Arguments: `{"status":"issued"}`}}, st.ToolCalls)
	})
	t.Run("the name split over fragments", func(t *testing.T) {
		t.Parallel()
		p := fakeProvider(t, sse(
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"list-","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"name":"invoices","arguments":"{}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		))
		st, _, err := stream(t, p)
		require.NoError(t, err)
		require.Equal(t, []ToolCall{{ID: "call_a", Name: "list-invoices", Arguments: `{}`}}, st.ToolCalls)
	})
	t.Run("whole calls without an index", func(t *testing.T) {
		t.Parallel()
		p := fakeProvider(t, sse(
			chunk(`{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"lookup-a","arguments":"{\"x\":1}"}}]}`, ""),
			chunk(`{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"lookup-b","arguments":"{\"y\":2}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		))
		st, _, err := stream(t, p)
		require.NoError(t, err)
		require.Equal(t, []ToolCall{{ID: "call_a", Name: "lookup-a", Arguments: `{"x":1}`}, {ID: "call_b", Name: "lookup-b", Arguments: `{"y":2}`}}, st.ToolCalls)
	})
	t.Run("interleaved by index, the id only on the first", func(t *testing.T) {
		t.Parallel()
		p := fakeProvider(t, sse(
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"a","arguments":"{\"x\""}},{"index":1,"id":"call_b","type":"function","function":{"name":"b","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}},{"index":0,"function":{"arguments":":1}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		))
		st, _, err := stream(t, p)
		require.NoError(t, err)
		require.Equal(t, []ToolCall{{ID: "call_a", Name: "a", Arguments: `{"x":1}`}, {ID: "call_b", Name: "b", Arguments: `{}`}}, st.ToolCalls)
	})
	t.Run("a call whose name never came", func(t *testing.T) {
		t.Parallel()
		// Replayed to the model as a call to "", it would make every later
		// request of the conversation fail.
		p := fakeProvider(t, sse(
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"arguments":"{}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		))
		_, _, err := stream(t, p)
		require.ErrorContains(t, err, "without a function name")
	})
}

// A stream that ends with [DONE] is complete even if no chunk carried a
// finish_reason (some servers never send one); without either it was cut.
func TestOpenAIDoneWithoutFinishReasonIsComplete(t *testing.T) {
	t.Parallel()
	p := fakeProvider(t, sse(chunk(`{"role":"assistant","content":"Hello."}`, "")))
	st, got, err := stream(t, p)
	require.NoError(t, err)
	require.Equal(t, "Hello.", st.Text)
	require.Equal(t, "Hello.", got)
	require.Equal(t, "stop", st.FinishReason)

	p = fakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: "+chunk(`{"role":"assistant","content":"The answer is [DONE]"}`, "")+"\n\n")
		fmt.Fprint(w, ": data: [DONE]\n\n") // a comment, not the end
	})
	_, _, err = stream(t, p)
	require.ErrorContains(t, err, "without a finish_reason or [DONE]")
}

// A refusal is what the model says instead of an answer, not an empty one.
func TestOpenAIRefusalIsText(t *testing.T) {
	t.Parallel()
	p := fakeProvider(t, sse(chunk(`{"role":"assistant","refusal":"I can't help with that."}`, "stop")))
	st, got, err := stream(t, p)
	require.NoError(t, err)
	require.Equal(t, "I can't help with that.", st.Text)
	require.Equal(t, st.Text, got)
}

// SSE comments (a proxy's keep-alive) are bytes from the endpoint: the idle
// timeout is how long a step may go without any.
func TestOpenAIKeepAliveCommentsPutOffTheIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 10 {
			fmt.Fprint(w, ": PROCESSING\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond)
		}
		fmt.Fprint(w, "data: "+chunk(`{"role":"assistant","content":"ok"}`, "stop")+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	p, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", MaxRetries: -1, IdleTimeout: 250 * time.Millisecond})
	require.NoError(t, err)
	st, _, err := stream(t, p)
	require.NoError(t, err, "a byte every 60 ms, yet cut by a 250 ms idle timeout")
	require.Equal(t, "ok", st.Text)
}

// Only the INVOICED_MODEL_* settings decide where prompts go and what is
// sent with them: openai-go's own OPENAI_* environment variables, left
// over for another tool, must not redirect them or add a key or headers.
// (Not parallel: it sets the environment.)
func TestOpenAIIgnoresOpenAIEnvironmentVariables(t *testing.T) {
	elsewhere := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere <- r.URL.Path
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(other.Close)
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		sse(chunk(`{"role":"assistant","content":"ok"}`, "stop"))(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("OPENAI_BASE_URL", other.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-env-api")
	t.Setenv("OPENAI_ADMIN_KEY", "sk-env-admin")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Env-Secret: leaked-env\nX-Other: also-env")

	for _, key := range []string{"", "sk-configured"} {
		p, err := FromSettings(env("INVOICED_MODEL_PROVIDER", "openai", "INVOICED_MODEL_NAME", "m", "INVOICED_MODEL_BASE_URL", srv.URL+"/v1", "INVOICED_MODEL_API_KEY", key))
		require.NoError(t, err)
		_, _, err = stream(t, p.(*OpenAI))
		require.NoError(t, err)
		h := <-got
		for k, v := range h {
			require.NotContains(t, strings.Join(v, ","), "env", "APIKey %q: %s came from the environment", key, k)
		}
		if key == "" {
			require.Empty(t, h.Get("Authorization"))
		} else {
			require.Equal(t, "Bearer "+key, h.Get("Authorization"))
		}
	}
	require.Empty(t, elsewhere, "OPENAI_BASE_URL redirected the prompt")
}

// The idle timeout is how long the endpoint sends nothing: chunks that all
// came in one read, handed one by one to a slow client, do not trip it.
func TestOpenAIIdleTimeoutDoesNotCountTheClientsTime(t *testing.T) {
	t.Parallel()
	var body strings.Builder
	for i := range 10 {
		body.WriteString("data: " + chunk(fmt.Sprintf(`{"content":"w%d "}`, i), "") + "\n\n")
	}
	body.WriteString("data: " + chunk(`{}`, "stop") + "\n\ndata: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body.String())
	}))
	t.Cleanup(srv.Close)
	p, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", MaxRetries: -1, IdleTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}, TextOnly(func(string) error {
		time.Sleep(100 * time.Millisecond)
		return nil
	}))
	require.NoError(t, err, "every chunk had arrived; the endpoint was not idle")
}
