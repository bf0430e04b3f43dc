package steploop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/internal/fakeopenai"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// recordedOpenAI is what fakeOpenAI's server received.
type recordedOpenAI struct {
	mu   sync.Mutex
	reqs []fakeopenai.Request
	raw  []string
}

// fakeOpenAI is an OpenAI-compatible server answering the n-th request
// with answers[n] (the last one past the end) as SSE data payloads, [DONE]
// appended; it returns what it records and its API root.
func fakeOpenAI(t *testing.T, answers ...[]string) (*recordedOpenAI, string) {
	z := &recordedOpenAI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req fakeopenai.Request
		var raw json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&raw)
		_ = json.Unmarshal(raw, &req)
		z.mu.Lock()
		n := len(z.reqs)
		z.reqs = append(z.reqs, req)
		z.raw = append(z.raw, string(raw))
		z.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		a := answers[len(answers)-1]
		if n < len(answers) {
			a = answers[n]
		}
		for _, c := range a {
			fmt.Fprint(w, "data: "+c+"\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return z, srv.URL + "/v1"
}

// sseChunk is a chat.completion.chunk with delta and finish ("": null).
func sseChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// A tool call whose name never arrived is refused as a model error: stored
// and replayed to the provider as a call to "", it would make every later
// request of the conversation fail (OpenAI-compatible servers answer 400).
func TestChatNamelessToolCallIsAModelErrorAndTheConversationGoesOn(t *testing.T) {
	t.Parallel()
	z, url := fakeOpenAI(t,
		[]string{sseChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"arguments":"{}"}}]}`, ""), sseChunk(`{}`, "tool_calls")},
		[]string{sseChunk(`{"role":"assistant","content":"ok"}`, "stop")},
	)
	prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: url, APIKey: "k", Model: "m", MaxRetries: -1})
	require.NoError(t, err)
	b := setupWithConfig(t, steploop.Config{Model: prov, Tools: registryWith("lookup-thing", capability.RiskRead, func(context.Context, capability.Call) (any, error) { return map[string]any{}, nil })})
	res := b.chat(t, b.Token, body("nameless", userMsg("u1", "hi")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	// The answer's final metadata (finishReason "error") precedes the error,
	// so a client holds what is stored.
	require.Equal(t, []string{"start", "start-step", "message-metadata", "error"}, chunkTypes(res.Chunks))

	_, msgs := b.conversation(t, b.Token, "nameless")
	require.NotContains(t, string(msgs[len(msgs)-1]), `"tool-"`, "no nameless call is stored")
	res = b.chat(t, b.Token, body("nameless", anyList(msgs, userMsg("u2", "again"))...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "finish", res.Chunks[len(res.Chunks)-1]["type"])
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, m := range z.reqs[len(z.reqs)-1].Messages {
		require.Empty(t, m.ToolCalls, "nothing of the nameless call reaches the model: %s", z.raw[len(z.raw)-1])
	}
}

// A text answer cut by the token limit or a content filter reaches the
// client as such, not as a complete "stop".
func TestChatTruncatedAnswerFinishesWithItsReason(t *testing.T) {
	t.Parallel()
	for provider, ui := range map[string]string{"length": "length", "content_filter": "content-filter", "stop": "stop"} {
		_, url := fakeOpenAI(t, []string{sseChunk(`{"role":"assistant","content":"The invoices are INV-1, INV-"}`, ""), sseChunk(`{}`, provider)})
		prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: url, APIKey: "k", Model: "m", MaxRetries: -1})
		require.NoError(t, err)
		b := setupWithConfig(t, steploop.Config{Model: prov})
		res := b.chat(t, b.Token, body("cut", userMsg("u1", "list")))
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		last := res.Chunks[len(res.Chunks)-1]
		require.Equal(t, "finish", last["type"], provider)
		require.Equal(t, ui, last["finishReason"], provider)
	}
}
