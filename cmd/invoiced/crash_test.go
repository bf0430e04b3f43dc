package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/idempotency"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// failpointEnv makes a child serve kill itself (SIGKILL, as kill -9) at
// an idempotency.Stage while completing a key: "stage key".
const failpointEnv = "INVOICED_TEST_FAILPOINT"

func init() {
	stage, key, ok := strings.Cut(os.Getenv(failpointEnv), " ")
	if !ok {
		return
	}
	idempotency.Failpoint = func(s idempotency.Stage, k string) {
		if string(s) == stage && k == key {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}

// Done when (issue 37): serve is killed at the worst moment of a keyed
// request — after its effect commits and before the answer is written, or
// just before that commit — for a customer, a payment, an issue and a
// credit note; the client's retry with the same key and body makes one
// effect in all: after the commit it replays the stored answer, before it
// it runs at once (no 409 waiting out a lease).
func TestKilledAroundTheCommitARetryMakesOneEffect(t *testing.T) {
	t.Parallel()
	for _, stage := range []idempotency.Stage{idempotency.StageAfterCommit, idempotency.StageBeforeCommit} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := storetest.URL(t)
			e := env{"DATABASE_URL": dbURL, "INVOICED_ADDR": freeAddr(t), "INVOICED_LOG_LEVEL": "warn"}
			tokens := map[string]string{}
			for _, u := range [][2]string{{"ada", "admin"}, {"cleo", "clerk"}, {"abe", "approver"}} {
				r := invoke(ctx, e, "users", "create", "--username", u[0], "--role", u[1])
				require.Equal(t, 0, r.code, r.stderr)
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				tokens[u[0]] = lines[len(lines)-1]
			}
			setSeller(ctx, t, e, "ada")
			pool, err := pgxpool.New(ctx, dbURL)
			require.NoError(t, err)
			defer pool.Close()
			count := func(sql string, args ...any) int {
				var n int
				require.NoError(t, pool.QueryRow(ctx, sql, args...).Scan(&n))
				return n
			}

			// One serve at a time on the address: restart stops the last.
			var child *exec.Cmd
			restart := func(e env) {
				if child != nil {
					_ = child.Process.Kill()
					_ = child.Wait()
				}
				child = startChild(t, e)
			}
			restart(e)
			c := crashClient{t: t, base: "http://" + e["INVOICED_ADDR"], token: tokens["cleo"]}
			// Two invoices issued through the gate: one to pay, one to credit.
			paid, credited := draftOverHTTP(t, e["INVOICED_ADDR"], tokens["cleo"]), draftOverHTTP(t, e["INVOICED_ADDR"], tokens["cleo"])
			for _, id := range []string{paid, credited} {
				c.approved("/v1/invoices/"+id+"/issue", `{}`, tokens["abe"])
				status, body, _ := c.post("/v1/invoices/"+id+"/issue", `{}`, "")
				require.Equal(t, http.StatusOK, status, body)
			}
			toIssue := draftOverHTTP(t, e["INVOICED_ADDR"], tokens["cleo"])
			c.approved("/v1/invoices/"+toIssue+"/issue", `{}`, tokens["abe"])
			creditBody := `{"amount": 2500, "currency": "EUR", "reason": "goodwill"}`
			c.approved("/v1/invoices/"+credited+"/credit-notes", creditBody, tokens["abe"])

			for _, op := range []struct {
				name, path, body string
				status           int
				effects          func() int
			}{
				{"customer", "/v1/customers", `{"name": "Crash Test GmbH", "currency": "EUR"}`, http.StatusCreated,
					func() int { return count(`SELECT count(*) FROM customers WHERE name = 'Crash Test GmbH'`) }},
				{"payment", "/v1/invoices/" + paid + "/payments",
					`{"amount": 5000, "currency": "EUR", "method": "bank_transfer", "received_on": "` + time.Now().UTC().Format(time.DateOnly) + `"}`,
					http.StatusCreated, func() int { return count(`SELECT count(*) FROM payments WHERE invoice_id = $1`, paid) }},
				{"issue", "/v1/invoices/" + toIssue + "/issue", `{}`, http.StatusOK,
					func() int {
						return count(`SELECT count(*) FROM invoices WHERE id = $1 AND number IS NOT NULL`, toIssue)
					}},
				{"credit note", "/v1/invoices/" + credited + "/credit-notes", creditBody, http.StatusCreated,
					func() int { return count(`SELECT count(*) FROM credit_notes WHERE invoice_id = $1`, credited) }},
			} {
				key := "crash " + op.name
				before := op.effects()
				crashing := env{failpointEnv: string(stage) + " " + key}
				for k, v := range e {
					crashing[k] = v
				}
				restart(crashing)
				_, _, err := c.send(op.path, op.body, key)
				require.Error(t, err, "%s: the server died before answering", op.name)
				restart(e)
				status, body, replayed := c.post(op.path, op.body, key)
				require.Equal(t, op.status, status, "%s: %s", op.name, body)
				require.Equal(t, before+1, op.effects(), "%s: one effect", op.name)
				if stage == idempotency.StageAfterCommit {
					require.True(t, replayed, "%s: the retry replays the answer stored with the effect", op.name)
				} else {
					require.False(t, replayed, "%s: nothing was stored, so the retry ran at once", op.name)
				}
				// And it stays one.
				again, againBody, replayed := c.post(op.path, op.body, key)
				require.Equal(t, op.status, again)
				require.True(t, replayed)
				require.Equal(t, body, againBody)
				require.Equal(t, before+1, op.effects(), "%s: still one effect", op.name)
			}
		})
	}
}

// crashClient sends the requests of the crash test.
type crashClient struct {
	t     *testing.T
	base  string
	token string
}

// send posts body to path with an Idempotency-Key (none when key is "").
func (c crashClient) send(path, body, key string) (*http.Response, string, error) {
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewBufferString(body))
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(idempotency.HeaderKey, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// post is send that must be answered.
func (c crashClient) post(path, body, key string) (status int, answer string, replayed bool) {
	c.t.Helper()
	resp, answer, err := c.send(path, body, key)
	require.NoError(c.t, err)
	return resp.StatusCode, answer, resp.Header.Get(idempotency.HeaderReplayed) == "true"
}

// approved asks for the approval that path with body needs and has the
// approver approve it.
func (c crashClient) approved(path, body, approver string) {
	c.t.Helper()
	status, answer, _ := c.post(path, body, "")
	require.Equal(c.t, http.StatusForbidden, status, answer)
	var p struct {
		ApprovalID string `json:"approval_id"`
	}
	require.NoError(c.t, json.Unmarshal([]byte(answer), &p))
	status, answer, _ = crashClient{t: c.t, base: c.base, token: approver}.post("/v1/approvals/"+p.ApprovalID+"/approve", `{}`, "")
	require.Equal(c.t, http.StatusOK, status, answer)
}
