package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/e2etest"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"
)

// childServe makes the test binary run `invoiced serve` instead of the
// tests: a server the test can kill -9. childArgs makes it run the
// command its value spells (words split on spaces), as on a terminal.
const (
	childServe = "INVOICED_TEST_CHILD_SERVE"
	childArgs  = "INVOICED_TEST_CHILD_ARGS"
)

func TestMain(m *testing.M) {
	args := strings.Fields(os.Getenv(childArgs))
	if os.Getenv(childServe) == "1" {
		args = []string{"serve"}
	}
	if len(args) > 0 {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, args, envFromOS(), os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// startChild runs serve in a process of its own with e's settings.
func startChild(t *testing.T, e env) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childServe+"=1")
	for k, v := range e {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitServeReady(t, e["INVOICED_ADDR"])
	return cmd
}

// Done when: the server is killed (SIGKILL) right after an issue commits,
// before the event goes out; the invoice.issued event is delivered after
// a restart, verified, once. Deterministic: the test pauses River's
// webhooks queue (as an operator can), so nothing is sent before the kill.
func TestKilledRightAfterAnIssueCommitsTheEventIsDeliveredAfterRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.URL(t)
	e := env{"DATABASE_URL": dbURL, "INVOICED_ADDR": freeAddr(t), "INVOICED_WEBHOOKS_ALLOW_PRIVATE": "true",
		"INVOICED_WEBHOOK_RETRY_SCHEDULE": "100ms,200ms,400ms", "INVOICED_LOG_LEVEL": "warn"}
	tokens := map[string]string{}
	for _, u := range [][2]string{{"ada", "admin"}, {"cleo", "clerk"}, {"abe", "approver"}} {
		r := invoke(ctx, e, "users", "create", "--username", u[0], "--role", u[1])
		require.Equal(t, 0, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		tokens[u[0]] = lines[len(lines)-1]
	}
	setSeller(ctx, t, e, "ada")
	rcv := e2etest.StartReceiver(t)
	r := invoke(ctx, e, "webhooks", "add", rcv.URL, "--events", "invoice.issued", "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	rcv.SetSecrets(t, lines[len(lines)-1])

	child := startChild(t, e)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	ops, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	require.NoError(t, ops.QueuePause(ctx, outbox.QueueWebhooks, nil))
	// The running server learns of the pause by notification within
	// milliseconds; give it ample time.
	time.Sleep(time.Second)

	invoiceID := draftOverHTTP(t, e["INVOICED_ADDR"], tokens["cleo"])
	base := "http://" + e["INVOICED_ADDR"]
	status, body := post(t, base+"/v1/invoices/"+invoiceID+"/issue", tokens["cleo"])
	require.Equal(t, http.StatusForbidden, status, body)
	var p struct {
		ApprovalID string `json:"approval_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	status, body = post(t, base+"/v1/approvals/"+p.ApprovalID+"/approve", tokens["abe"])
	require.Equal(t, http.StatusOK, status, body)
	status, body = post(t, base+"/v1/invoices/"+invoiceID+"/issue", tokens["cleo"])
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()

	var waiting int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job j
		JOIN webhook_deliveries d ON d.id = (j.args->>'delivery_id')::uuid
		WHERE j.kind = 'webhook.deliver' AND d.event_type = 'invoice.issued' AND j.state = 'available'`).Scan(&waiting))
	require.Equal(t, 1, waiting, "the delivery was committed with the issue and not yet worked")
	require.Empty(t, rcv.Requests())

	require.NoError(t, ops.QueueResume(ctx, outbox.QueueWebhooks, nil))
	startChild(t, e)
	reqs := rcv.Wait(t, 1, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	reqs = rcv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "invoice.issued", reqs[0].Type)
	require.Equal(t, []int{0}, reqs[0].VerifiedWith, reqs[0].Error)
}

func post(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// setSeller sets sellerJSON, a seller invoices can be issued by, as the
// admin named.
func setSeller(ctx context.Context, t *testing.T, e env, admin string) {
	t.Helper()
	r := invokeWithInput(ctx, e, sellerJSON, "seller", "set", "--as", admin)
	require.Equal(t, 0, r.code, r.stderr)
}

// draftOverHTTP creates a customer with an address and a one-line draft
// over the API.
func draftOverHTTP(t *testing.T, addr, token string) string {
	t.Helper()
	do := func(path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(string(b)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	c := do("/v1/customers", map[string]any{"name": "Acme GmbH", "currency": "EUR",
		"address": map[string]any{"lines": []string{"Marktplatz 1"}, "postcode": "80331", "city": "München", "country": "DE"}})
	inv := do("/v1/invoices", map[string]any{"customer_id": c["id"], "lines": []any{
		map[string]any{"description": "Consulting", "quantity": 1, "unit_amount": 10000},
	}})
	return inv["id"].(string)
}
