package steploop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// recordingModel records every model request and answers from a script.
type recordingModel struct {
	mu   sync.Mutex
	p    model.Provider
	reqs []model.Request
}

func (r *recordingModel) Name() string { return "recording" }

func (r *recordingModel) Stream(ctx context.Context, req model.Request, on model.Events) (model.Step, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	p := r.p
	r.mu.Unlock()
	return p.Stream(ctx, req, on)
}

func (r *recordingModel) last() model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

// scriptInto makes rec answer from rules, "ok" otherwise.
func scriptInto(t *testing.T, rec *recordingModel, rules ...model.ScriptRule) {
	t.Helper()
	sc, err := model.NewScripted(model.Script{Rules: rules, Default: []model.ScriptStep{{Text: "ok"}}})
	require.NoError(t, err)
	rec.mu.Lock()
	rec.p = sc
	rec.mu.Unlock()
}

// toolRule answers a user message holding match with one call of tool,
// then a short text.
func toolRule(match, tool, input string) model.ScriptRule {
	return model.ScriptRule{Match: match, Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: tool, Input: json.RawMessage(input)}}},
		{Text: "Handled."},
	}}
}

// policyClock is the approvals policy's clock, moved by the test.
type policyClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *policyClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *policyClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setupGates is the whole app (real approvals gate, confirm registry and
// invoices) with a recording model and a movable policy clock.
func setupGates(t *testing.T) (*apptest.Harness, *recordingModel, *policyClock) {
	t.Helper()
	rec := &recordingModel{}
	clk := &policyClock{t: time.Now()}
	h := apptest.New(t, apptest.Options{Config: app.Config{Model: rec, Approvals: approvals.Policy{Now: clk.Now}}})
	return h, rec, clk
}

func countRows(t *testing.T, h *apptest.Harness, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, h.Pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// answerConfirmation is msgs with the paused call of tool approved or
// denied, as the browser sends it.
func answerConfirmation(t *testing.T, msgs []json.RawMessage, tool string, ok bool) []any {
	t.Helper()
	out := editToolPart(t, msgs, tool, func(p map[string]any) {
		p["state"] = "approval-responded"
		a := p["approval"].(map[string]any)
		a["approved"] = ok
		if !ok {
			a["reason"] = "no thanks"
		}
	})
	return anyList(out)
}

// requireDeniedResults checks that req carries tool results and every one
// is CONFIRMATION_INVALID denied.
func requireDeniedResults(t *testing.T, req model.Request) {
	t.Helper()
	found := false
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			var v struct {
				Error struct{ Code, Reason string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(m.Content), &v), m.Content)
			require.Equal(t, "CONFIRMATION_INVALID", v.Error.Code)
			require.Equal(t, "denied", v.Error.Reason)
			found = true
		}
	}
	require.True(t, found, "the model read a tool result")
}

// dataApproval is the first data-approval chunk's data.
func dataApproval(t *testing.T, res chatResult) map[string]any {
	t.Helper()
	for _, c := range res.Chunks {
		if c["type"] == "data-approval" {
			return c["data"].(map[string]any)
		}
	}
	t.Fatalf("no data-approval chunk in %s", res.Body)
	return nil
}

// A bound tool answered by many concurrent identical requests runs once.
func TestChatGateBoundConcurrentAnswerRunsOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatGateBoundConcurrentAnswerRunsOnce(t, mode)
		})
	}
}

func testChatGateBoundConcurrentAnswerRunsOnce(t *testing.T, mode string) {
	h, rec, _ := setupGates(t)
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	scriptInto(t, rec, toolRule("create", "create-customer", `{"name":"Concurrent Ltd","currency":"EUR"}`))
	b := &bundle{URL: h.URL, Mode: mode}
	res := b.chat(t, clerk, body("gate-c1", userMsg("u1", "create a customer")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Contains(t, chunkTypes(res.Chunks), "tool-approval-request")
	_, msgs := b.conversation(t, clerk, "gate-c1")
	list := answerConfirmation(t, msgs, "create-customer", true)
	var wg sync.WaitGroup
	var mu sync.Mutex
	oks := 0
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := b.chat(t, clerk, body("gate-c1", list...))
			if r.Status == http.StatusOK {
				mu.Lock()
				oks++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM customers WHERE name = 'Concurrent Ltd'`), "the bound effect must run exactly once")
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM audit_events WHERE type = 'customer.created' AND event->>'via' = 'agent:gate-c1'`))
	require.LessOrEqual(t, oks, 1)
}

// A denial reaches the model as CONFIRMATION_INVALID denied; nothing runs.
func TestChatGateBoundDenialReachesModel(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatGateBoundDenialReachesModel(t, mode)
		})
	}
}

func testChatGateBoundDenialReachesModel(t *testing.T, mode string) {
	h, rec, _ := setupGates(t)
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	scriptInto(t, rec, toolRule("create", "create-customer", `{"name":"Denied Ltd","currency":"EUR"}`))
	b := &bundle{URL: h.URL, Mode: mode}
	res := b.chat(t, clerk, body("gate-d1", userMsg("u1", "create a customer")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, msgs := b.conversation(t, clerk, "gate-d1")
	res = b.chat(t, clerk, body("gate-d1", answerConfirmation(t, msgs, "create-customer", false)...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Contains(t, chunkTypes(res.Chunks), "tool-output-denied")
	require.Equal(t, 0, countRows(t, h, `SELECT count(*) FROM customers WHERE name = 'Denied Ltd'`))
	requireDeniedResults(t, rec.last())
	// A later request still shows the same typed result to the model.
	_, msgs = b.conversation(t, clerk, "gate-d1")
	res = b.chat(t, clerk, body("gate-d1", anyList(msgs, userMsg("u2", "hello"))...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	requireDeniedResults(t, rec.last())
}

// A clerk demoted to approver between the pause and the answer cannot run
// a write through the chat (REST refuses the approver's writes).
func TestChatGateBoundDemotedPrincipal(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatGateBoundDemotedPrincipal(t, mode)
		})
	}
}

func testChatGateBoundDemotedPrincipal(t *testing.T, mode string) {
	h, rec, _ := setupGates(t)
	u, clerk := h.User(t, "clerk", identity.RoleClerk)
	scriptInto(t, rec, toolRule("create", "create-customer", `{"name":"Gate Demoted","currency":"EUR"}`))
	b := &bundle{URL: h.URL, Mode: mode}
	res := b.chat(t, clerk, body("gate-r1", userMsg("u1", "create a customer")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, msgs := b.conversation(t, clerk, "gate-r1")
	_, err := h.Pool.Exec(context.Background(), `UPDATE users SET role = 'approver' WHERE id = $1`, u.ID)
	require.NoError(t, err)
	r := h.Do(t, http.MethodPost, "/v1/customers", clerk, map[string]any{"name": "Gate Rest", "currency": "EUR"})
	require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
	_ = b.chat(t, clerk, body("gate-r1", answerConfirmation(t, msgs, "create-customer", true)...))
	require.Equal(t, 0, countRows(t, h, `SELECT count(*) FROM customers WHERE name = 'Gate Demoted'`))
	// Disabled user and revoked token: 401, nothing runs.
	_, err = h.Pool.Exec(context.Background(), `UPDATE users SET role = 'clerk' WHERE id = $1`, u.ID)
	require.NoError(t, err)
	require.NoError(t, identity.UserSetDisabled(context.Background(), h.Pool, u.ID, true))
	res = b.chat(t, clerk, body("gate-r1", answerConfirmation(t, msgs, "create-customer", true)...))
	require.Equal(t, http.StatusUnauthorized, res.Status, string(res.Body))
	require.Equal(t, 0, countRows(t, h, `SELECT count(*) FROM customers WHERE name = 'Gate Demoted'`))
}

// An approval decided on one version of the draft is stale once it
// changes: the chat answers APPROVAL_STALE with a complete data-approval.
func TestChatGateStaleThroughChat(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatGateStaleThroughChat(t, mode)
		})
	}
}

func testChatGateStaleThroughChat(t *testing.T, mode string) {
	h, rec, _ := setupGates(t)
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)
	ctx := context.Background()
	d := invoicetest.Draft(ctx, t, h.Pool, invoicetest.DraftOpts{}).ID.String()
	scriptInto(t, rec, toolRule("issue", "issue-invoice", `{"invoice_id":"`+d+`"}`))
	b := &bundle{URL: h.URL, Mode: mode}
	res := b.chat(t, clerk, body("gate-s1", userMsg("u1", "issue it")))
	e := toolOutputError(t, res)
	require.Equal(t, "APPROVAL_REQUIRED", e["code"])
	aid := e["approval_id"].(string)
	r := h.Do(t, http.MethodPost, "/v1/approvals/"+aid+"/approve", approver, map[string]string{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodPatch, "/v1/invoices/"+d, clerk, map[string]any{"memo": "changed after approval"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	_, msgs := b.conversation(t, clerk, "gate-s1")
	res = b.chat(t, clerk, body("gate-s1", anyList(msgs, userMsg("u2", "issue it now"))...))
	e = toolOutputError(t, res)
	require.NotNil(t, e, "issued on an approval of another version: %s", res.Body)
	require.Equal(t, "APPROVAL_STALE", e["code"])
	da := dataApproval(t, res)
	for _, k := range []string{"approval_id", "status", "capability", "target"} {
		require.Contains(t, da, k)
		require.NotNil(t, da[k], k)
	}
	require.Equal(t, "draft", invoiceStatus(t, h, clerk, d))
	require.NotContains(t, chunkTypes(res.Chunks), "tool-approval-request")
}

// Many conversations of the same clerk spend one approval at once: one
// effect, one consumption, one audit event.
func TestChatGateConcurrentSpendAcrossConversations(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatGateConcurrentSpendAcrossConversations(t, mode)
		})
	}
}

func testChatGateConcurrentSpendAcrossConversations(t *testing.T, mode string) {
	h, rec, _ := setupGates(t)
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)
	ctx := context.Background()
	d := invoicetest.Draft(ctx, t, h.Pool, invoicetest.DraftOpts{}).ID.String()
	scriptInto(t, rec, toolRule("delete", "delete-invoice", `{"invoice_id":"`+d+`"}`))
	b := &bundle{URL: h.URL, Mode: mode}
	const n = 12
	var aid string
	for i := 0; i < n; i++ {
		res := b.chat(t, clerk, body("gate-x"+string(rune('a'+i)), userMsg("u1", "delete it")))
		e := toolOutputError(t, res)
		require.Equal(t, "APPROVAL_REQUIRED", e["code"])
		if aid == "" {
			aid = e["approval_id"].(string)
		}
		require.Equal(t, aid, e["approval_id"], "pending request is reused")
	}
	r := h.Do(t, http.MethodPost, "/v1/approvals/"+aid+"/approve", approver, map[string]string{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	var wg sync.WaitGroup
	var mu sync.Mutex
	success := 0
	for i := 0; i < n; i++ {
		conv := "gate-x" + string(rune('a'+i))
		_, msgs := b.conversation(t, clerk, conv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := b.chat(t, clerk, body(conv, anyList(msgs, userMsg("u2", "delete it now"))...))
			for _, c := range res.Chunks {
				if c["type"] == "tool-output-available" {
					if out, ok := c["output"].(map[string]any); ok && out["deleted"] == true {
						mu.Lock()
						success++
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, success)
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM audit_events WHERE type = 'invoice.deleted' AND subject_id = $1`, d))
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM audit_events WHERE type = 'approval.consumed' AND subject_id = $1`, aid))
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM audit_events WHERE type = 'invoice.deleted' AND event->>'via' LIKE 'agent:gate-x%'`))
}

// Denied and expired approvals reach the chat as typed results with a
// complete data-approval; an approver's chat cannot even request one.
func TestChatGateDeniedExpiredAndApproverRole(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatGateDeniedExpiredAndApproverRole(t, mode)
		})
	}
}

func testChatGateDeniedExpiredAndApproverRole(t *testing.T, mode string) {
	h, rec, clk := setupGates(t)
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)
	ctx := context.Background()
	d1 := invoicetest.Draft(ctx, t, h.Pool, invoicetest.DraftOpts{}).ID.String()
	d2 := invoicetest.Draft(ctx, t, h.Pool, invoicetest.DraftOpts{}).ID.String()
	scriptInto(t, rec, toolRule("first", "issue-invoice", `{"invoice_id":"`+d1+`"}`), toolRule("second", "delete-invoice", `{"invoice_id":"`+d2+`"}`))
	b := &bundle{URL: h.URL, Mode: mode}

	res := b.chat(t, clerk, body("gate-e1", userMsg("u1", "issue the first")))
	aid := toolOutputError(t, res)["approval_id"].(string)
	r := h.Do(t, http.MethodPost, "/v1/approvals/"+aid+"/deny", approver, map[string]string{"reason": "wrong amount"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	_, msgs := b.conversation(t, clerk, "gate-e1")
	res = b.chat(t, clerk, body("gate-e1", anyList(msgs, userMsg("u2", "issue the first again"))...))
	e := toolOutputError(t, res)
	require.Equal(t, "APPROVAL_DENIED", e["code"])
	da := dataApproval(t, res)
	require.Equal(t, "denied", da["status"])
	require.Equal(t, aid, da["approval_id"])
	require.Equal(t, "issue-invoice", da["capability"])
	require.NotNil(t, da["target"])
	// The model read the typed result.
	var sawDenied bool
	for _, m := range rec.last().Messages {
		if m.Role == model.RoleTool && strings.Contains(m.Content, "APPROVAL_DENIED") {
			sawDenied = true
		}
	}
	require.True(t, sawDenied)

	res = b.chat(t, clerk, body("gate-e2", userMsg("u1", "delete the second")))
	bid := toolOutputError(t, res)["approval_id"].(string)
	r = h.Do(t, http.MethodPost, "/v1/approvals/"+bid+"/approve", approver, map[string]string{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	clk.Add(25 * time.Hour)
	_, msgs = b.conversation(t, clerk, "gate-e2")
	res = b.chat(t, clerk, body("gate-e2", anyList(msgs, userMsg("u2", "delete the second now"))...))
	e = toolOutputError(t, res)
	require.NotNil(t, e, "an expired approval was spent: %s", res.Body)
	require.Equal(t, "APPROVAL_EXPIRED", e["code"])
	require.Equal(t, "expired", dataApproval(t, res)["status"])
	require.Equal(t, "draft", invoiceStatus(t, h, clerk, d2))

	// An approver reads and decides approvals; it does not chat
	// (DESIGN.md §7), so its agent cannot even ask for one.
	before := countRows(t, h, `SELECT count(*) FROM approval_requests`)
	res = b.chat(t, approver, body("gate-e3", userMsg("u1", "delete the second")))
	require.Equal(t, http.StatusForbidden, res.Status, string(res.Body))
	require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
	require.Equal(t, before, countRows(t, h, `SELECT count(*) FROM approval_requests`))
	require.Zero(t, countRows(t, h, `SELECT count(*) FROM conversations WHERE id = 'gate-e3'`))
	status, _ := b.conversation(t, approver, "gate-e2")
	require.Equal(t, http.StatusForbidden, status)
}
