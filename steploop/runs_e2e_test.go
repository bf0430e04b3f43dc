package steploop_test

// Runs that survive the tab, driven by the real ai@7 client classes
// (e2e/runs.e2e.mjs) against two replicas of the step loop on one database
// and, for a replica that dies, a third in a process of its own that the
// script kills with SIGKILL. The model is the fake OpenAI-compatible
// server of harness_test.go (the real openai-go path).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/fakeopenai"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/e2etest"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// runsScript is what the runs' model answers: a slow text ("slow", see
// fakeModel), a tool that takes a while ("nap"), reasoning around a tool
// call ("think"), and a short answer otherwise.
var runsScript = model.Script{Rules: []model.ScriptRule{
	{Match: "nap", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "nap-thing", Input: json.RawMessage(`{"for":"a while"}`)}}},
		{Text: "Rested."},
	}},
	{Match: "think", Steps: []model.ScriptStep{
		{Reasoning: "Let me look it up.", ToolCalls: []model.ScriptToolCall{{Name: "lookup-thing", Input: json.RawMessage(`{"key":"beta"}`)}}},
		{Reasoning: "It is there.", Text: "Beta is v-beta."},
	}},
}, Default: []model.ScriptStep{{Text: "Hello there."}}}

// runsNap is how long nap-thing takes: long enough to leave or stop while
// it runs.
const runsNap = 1500 * time.Millisecond

// runsRegistry is the runs' tools.
func runsRegistry() *capability.Registry {
	reg := capability.NewRegistry()
	reg.MustRegister(
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "lookup-thing", Description: "Look a thing up.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, call capability.Call) (any, error) {
				var in struct{ Key string }
				_ = json.Unmarshal(call.Input, &in)
				return map[string]any{"key": in.Key, "value": "v-" + in.Key}, nil
			},
		},
		capability.Capability{
			Descriptor: capability.Descriptor{Name: "nap-thing", Description: "Takes a while.", Risk: capability.RiskRead,
				InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(context.Context, capability.Call) (any, error) {
				time.Sleep(runsNap)
				return map[string]any{"rested": true}, nil
			},
		},
	)
	return reg
}

// runsServer serves the step loop over pool with the runs' tools, the
// model at modelURL and limits, on a LISTEN connection of its own.
func runsServer(pool *pgxpool.Pool, modelURL string, limits steploop.Limits, log *slog.Logger) (*store.Listener, http.Handler, error) {
	prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: modelURL, APIKey: "test-key", Model: "fake-model", MaxRetries: -1})
	if err != nil {
		return nil, nil, err
	}
	listener := store.NewListener(pool.Config().ConnConfig, log)
	svc, err := steploop.New(steploop.Config{DB: pool, Model: prov, Tools: runsRegistry(), Frontend: []steploop.FrontendTool{steploop.ShowInvoice},
		Log: log, Limits: limits, Listener: listener})
	if err != nil {
		return nil, nil, err
	}
	if err := listener.Start(context.Background()); err != nil {
		return nil, nil, err
	}
	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	chatRoutes(e.Group("/v1", identity.Authenticate(pool, nil, steploop.DefersBearer)), svc)
	return listener, e, nil
}

// runsBundle is two replicas on one database, their model and users.
type runsBundle struct {
	Pool         *pgxpool.Pool
	Model        *fakeModel
	A, B         string // the replicas' URLs
	Token, Other string
	Limits       steploop.Limits
}

// runsLimits are short enough for a dead replica's conversation to be
// freed within seconds, with a context budget the 300-message
// conversation of case (d) overflows.
var runsLimits = steploop.Limits{LeaseTTL: 2 * time.Second, ContextBudget: 2000}

func setupRuns(t *testing.T) *runsBundle {
	t.Helper()
	pool := storetest.Pool(t)
	b := &runsBundle{Pool: pool, Model: newFakeModelWith(t, runsScript), Limits: runsLimits}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, url := range []*string{&b.A, &b.B} {
		listener, h, err := runsServer(pool, b.Model.URL+"/v1", runsLimits, log)
		require.NoError(t, err)
		t.Cleanup(listener.Close)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		*url = srv.URL
	}
	ctx := context.Background()
	for _, u := range []struct {
		name string
		tok  *string
	}{{"clerk", &b.Token}, {"other", &b.Other}} {
		user, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: u.name, Role: identity.RoleClerk})
		require.NoError(t, err)
		*u.tok, err = identity.TokenCreate(ctx, pool, user.ID, "test")
		require.NoError(t, err)
	}
	return b
}

// Replica processes: the test binary runs one when this variable names the
// database (see TestMain), serving the runs' step loop until it is killed.
const (
	replicaEnv      = "STEPLOOP_TEST_REPLICA_DB"
	replicaModelEnv = "STEPLOOP_TEST_REPLICA_MODEL"
)

// runReplica is a replica process: it prints its address, then serves.
func runReplica() int {
	pool, err := pgxpool.New(context.Background(), os.Getenv(replicaEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	_, h, err := runsServer(pool, os.Getenv(replicaModelEnv), runsLimits, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	fmt.Printf("listening http://%s\n", ln.Addr())
	_ = http.Serve(ln, h)
	return 0
}

// startReplica runs a replica process over b's database and model, and
// returns its URL and process id; it is killed at cleanup if still alive.
func startReplica(t *testing.T, b *runsBundle) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+b.Pool.Config().ConnString(), replicaModelEnv+"="+b.Model.URL+"/v1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the replica process did not start")
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, line)
	return url, cmd.Process.Pid
}

// TestE2ERunsWithTheAISDKClient runs e2e/runs.e2e.mjs: (a) a client that
// leaves mid-text and mid-tool and resumes; (b) resuming on the other
// replica; (c) stopping mid-text and mid-tool, then a new message, in both
// request modes; (d) a 300-message conversation in last-message mode under
// a context budget; (e) usage metadata; (f) tool input and reasoning in
// order; (g) resume with no run; (h) a replica killed mid-answer.
func TestE2ERunsWithTheAISDKClient(t *testing.T) {
	t.Parallel()
	node, dir := e2etest.Node(t)
	b := setupRuns(t)
	replica, pid := startReplica(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "runs.e2e.mjs")
	cmd.Dir = dir
	rich, err := json.Marshal(richAnswer())
	require.NoError(t, err)
	cmd.Env = append(os.Environ(), "INVOICED_URL_A="+b.A, "INVOICED_URL_B="+b.B, "INVOICED_TOKEN="+b.Token, "INVOICED_OTHER_TOKEN="+b.Other,
		"INVOICED_HEAD="+string(steploop.RunHead(richAnswer())), "INVOICED_HEAD_MESSAGE="+string(rich),
		"INVOICED_REPLICA_URL="+replica, fmt.Sprintf("INVOICED_REPLICA_PID=%d", pid), fmt.Sprintf("INVOICED_LEASE_MS=%d", runsLimits.LeaseTTL.Milliseconds()))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("report:\n%s", stderr.String())
	require.NoError(t, err, "node runs.e2e.mjs failed:\nstdout: %s", stdout.String())

	var out struct {
		LongConversation string `json:"longConversation"`
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out), stdout.String())
	b.requireBoundedContext(t, out.LongConversation)
	b.requireNoReasoningSentBack(t)
}

// requireNoReasoningSentBack checks case (f) from the model's side: the
// step after the call read its result, and none of the reasoning the
// model streamed was sent back to it.
func (b *runsBundle) requireNoReasoningSentBack(t *testing.T) {
	t.Helper()
	readResult := false
	for _, r := range b.Model.Requests() {
		for _, m := range r.Messages {
			s, _ := m.Content.(string)
			require.NotContains(t, s, "Let me look it up.", "reasoning is not sent back to the model")
			readResult = readResult || strings.Contains(s, "v-beta")
		}
	}
	require.True(t, readResult, "the step after the call read its result")
}

// requireBoundedContext checks case (d) from the model's side: the last
// turn of the long conversation sent the system prompt and the newest
// turns within the budget, whole turns only, beginning with the user.
func (b *runsBundle) requireBoundedContext(t *testing.T, lastText string) {
	t.Helper()
	var last *fakeopenai.Request
	for _, r := range b.Model.Requests() {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Content == lastText {
			last = &r
		}
	}
	require.NotNil(t, last, "the model never saw %q", lastText)
	msgs := last.Messages
	require.Equal(t, "system", msgs[0].Role, "the system prompt is always sent")
	require.Equal(t, "user", msgs[1].Role, "the context begins with a user message")
	size := 0
	for _, m := range msgs[1:] {
		s, _ := m.Content.(string)
		size += len(s)
	}
	t.Logf("the last turn sent %d of the conversation's 300 messages (%d bytes, budget %d)", len(msgs)-1, size, b.Limits.ContextBudget)
	require.Less(t, len(msgs)-1, 299, "older turns were left out")
	require.LessOrEqual(t, size, b.Limits.ContextBudget)
	require.Greater(t, size, b.Limits.ContextBudget/2, "as many turns as fit")
}
