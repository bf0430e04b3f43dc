package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer serve's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestServeModelErrorsLeakNoSecretIntoLogsOrStream: a model endpoint that
// fails in the ways real ones do (a 401 whose body echoes the key and the
// prompt, an in-band error event echoing them) puts neither the API key,
// the bearer token nor the prompt into serve's logs, and no internal
// detail into the client's stream. openai-go reports a 401 by status only;
// an error event is logged by its type and code, not its text.
func TestServeModelErrorsLeakNoSecretIntoLogsOrStream(t *testing.T) {
	t.Parallel()
	logs, streams, _, token := runFailingChats(t)
	var problems []string
	for what, s := range map[string]string{"the model API key": leakKey, "the bearer token": token, "the prompt": leakPrompt} {
		if strings.Contains(logs, s) {
			problems = append(problems, what+" is in the logs")
		}
		for _, st := range streams {
			if strings.Contains(st, s) && s != leakPrompt {
				problems = append(problems, what+" is sent to the chat client")
			}
		}
	}
	// The status as a word: random message ids are hex and can hold "401".
	status := regexp.MustCompile(`\b401\b|Unauthorized`)
	for _, st := range streams {
		if strings.Contains(st, "invalid_api_key") || status.MatchString(st) || strings.Contains(st, "received error while streaming") {
			problems = append(problems, "the model's internal error detail reaches the chat client: "+st)
		}
	}
	require.Empty(t, problems)
}

// TestServeChatMetricsHoldAChatsLength: /metrics shows /v1/chat under its
// route, with duration buckets able to hold a chat's length.
func TestServeChatMetricsHoldAChatsLength(t *testing.T) {
	t.Parallel()
	_, _, metrics, _ := runFailingChats(t)
	var problems []string
	// Metrics: the route label, and buckets that reach a chat's length.
	if !strings.Contains(string(metrics), `invoiced_http_requests_total{method="POST",route="/v1/chat",status="200"} 2`) {
		problems = append(problems, "no invoiced_http_requests_total for POST /v1/chat 200")
	}
	re := regexp.MustCompile(`invoiced_http_request_duration_seconds_bucket\{method="POST",route="/v1/chat",le="([0-9.e+]+)"\}`)
	var top string
	for _, m := range re.FindAllStringSubmatch(string(metrics), -1) {
		top = m[1]
	}
	t.Logf("largest finite duration bucket for /v1/chat: %s s", top)
	var topF float64
	fmt.Sscan(top, &topF)
	if topF < 60 {
		problems = append(problems, fmt.Sprintf("the largest finite duration bucket for /v1/chat is %s s, but a chat runs up to the model's idle timeout (60 s) per step and the lease (9.5 min): every chat longer than ~10 s lands in +Inf", top))
	}
	require.Empty(t, problems)
}

const (
	leakKey    = "sk-test-leak-key-98765"
	leakPrompt = "secret-prompt-ABCDEF"
)

// runFailingChats runs two chats against a model that fails (a 401, then
// an in-band error event), both echoing the key and the prompt as some
// proxies do, and returns serve's logs, the streams, /metrics and the token.
func runFailingChats(t *testing.T) (string, []string, string, string) {
	const key, prompt = leakKey, leakPrompt
	var n int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		echo := fmt.Sprintf("key %s prompt %v", r.Header.Get("Authorization"), strings.Contains(string(body), prompt))
		if strings.Contains(string(body), prompt) {
			echo += " " + prompt
		}
		if i%2 == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":"invalid_api_key"}}`, echo)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", echo)
	}))
	defer srv.Close()

	dbURL := storetest.URL(t)
	token := createClerk(t, dbURL)
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	e := env{"DATABASE_URL": dbURL, "INVOICED_ADDR": addr, "INVOICED_METRICS_ADDR": metricsAddr, "INVOICED_LOG_LEVEL": "debug",
		"INVOICED_MODEL_PROVIDER": "openai", "INVOICED_MODEL_BASE_URL": srv.URL + "/v1",
		"INVOICED_MODEL_NAME": "m", "INVOICED_MODEL_API_KEY": key}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve"}, e, strings.NewReader(""), &out, &errb) }()
	waitServeReady(t, addr)

	var streams []string
	for i, id := range []string{"leak-1", "leak-2"} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat", bytes.NewReader(chatBody(id, prompt)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, "chat %d: %s", i, b)
		streams = append(streams, string(b))
	}
	mresp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	logs := out.String() + errb.String()
	t.Logf("logs:\n%s", logs)
	t.Logf("streams:\n%s", strings.Join(streams, "\n---\n"))
	return logs, streams, string(metrics), token
}
