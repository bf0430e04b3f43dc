package e2etest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Request is one request the receiver got.
type Request struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	VerifiedWith []int           `json:"verified_with"`
	Error        string          `json:"error"`
	Status       int             `json:"status"`
	Signatures   int             `json:"signatures"`
	Envelope     json.RawMessage `json:"envelope"`
}

// Receiver is e2e/webhook-receiver.mjs running: it verifies each request
// with the standardwebhooks npm package.
type Receiver struct {
	URL   string
	stdin io.WriteCloser
	acks  chan struct{}
	mu    sync.Mutex
	reqs  []Request
}

// StartReceiver starts a receiver that answers script's statuses in turn,
// then 200, until the test ends.
func StartReceiver(t testing.TB, script ...int) *Receiver {
	t.Helper()
	node, dir := Node(t)
	cmd := exec.Command(node, "webhook-receiver.mjs")
	cmd.Dir = dir
	codes := make([]string, len(script))
	for i, s := range script {
		codes[i] = strconv.Itoa(s)
	}
	cmd.Env = append(cmd.Environ(), "WEBHOOK_SCRIPT="+strings.Join(codes, ","))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("webhook receiver stderr: %s", stderr.String())
		}
	})
	r := &Receiver{stdin: stdin, acks: make(chan struct{}, 1)}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	require.True(t, sc.Scan(), "the receiver did not start: %s", stderr.String())
	var hello struct{ Listening int }
	require.NoError(t, json.Unmarshal(sc.Bytes(), &hello))
	r.URL = fmt.Sprintf("http://127.0.0.1:%d/hooks", hello.Listening)
	go func() {
		for sc.Scan() {
			var ack struct{ Ack bool }
			if json.Unmarshal(sc.Bytes(), &ack) == nil && ack.Ack {
				r.acks <- struct{}{}
				continue
			}
			var req Request
			if json.Unmarshal(sc.Bytes(), &req) == nil {
				r.mu.Lock()
				r.reqs = append(r.reqs, req)
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// SetSecrets gives the receiver the keys to verify with; Request's
// VerifiedWith holds the indexes of those that verified.
func (r *Receiver) SetSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"secrets": secrets})
	require.NoError(t, err)
	_, err = r.stdin.Write(append(b, '\n'))
	require.NoError(t, err)
	select {
	case <-r.acks:
	case <-time.After(10 * time.Second):
		t.Fatal("webhook receiver: no acknowledgement of the secrets")
	}
}

// Requests returns the requests so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Wait returns the requests once there are at least n, failing the test
// after timeout.
func (r *Receiver) Wait(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := r.Requests()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook receiver: %d of %d requests after %s: %+v", len(got), n, timeout, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
