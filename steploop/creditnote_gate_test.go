package steploop_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// toolOutput is the output of the first tool result in res.
func toolOutput(t *testing.T, res chatResult) map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	for _, c := range res.Chunks {
		if c["type"] == "tool-output-available" {
			return c["output"].(map[string]any)
		}
	}
	t.Fatalf("no tool output in %s", res.Body)
	return nil
}

// The credit-note gate through the chat: the agent's call asks for an
// approval (never a browser confirmation) that its chat user cannot
// decide; a change of the invoice after the approval makes it stale; a
// fresh approval issues the credit note once, and the same call again
// asks anew.
func TestChatGateCreditNote(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)
	ctx := context.Background()
	inv := invoicetest.Issued(ctx, t, h.Pool, invoicetest.DraftOpts{}).ID.String() // 120.00 EUR
	scriptInto(t, rec, toolRule("credit", "issue-credit-note", `{"invoice_id":"`+inv+`","reason":"goodwill","amount":2000}`))
	b := &bundle{URL: h.URL}
	turn := func(id, text string) chatResult {
		_, msgs := b.conversation(t, clerk, "gate-cn")
		return b.chat(t, clerk, body("gate-cn", anyList(msgs, userMsg(id, text))...))
	}

	res := b.chat(t, clerk, body("gate-cn", userMsg("u1", "credit 20 euros")))
	e := toolOutputError(t, res)
	require.Equal(t, "APPROVAL_REQUIRED", e["code"])
	require.NotContains(t, chunkTypes(res.Chunks), "tool-approval-request")
	require.Equal(t, "issue-credit-note", dataApproval(t, res)["capability"])
	first := e["approval_id"].(string)
	// The chat user asked for it; a clerk decides nothing.
	r := h.Do(t, http.MethodPost, "/v1/approvals/"+first+"/approve", clerk, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))

	r = h.Do(t, http.MethodPost, "/v1/approvals/"+first+"/approve", approver, map[string]string{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodPost, "/v1/invoices/"+inv+"/payments", clerk, map[string]any{
		"amount": 1000, "received_on": time.Now().UTC().Format(time.DateOnly), "method": "cash"})
	require.Equal(t, http.StatusCreated, r.StatusCode, string(r.Body))
	res = turn("u2", "credit it now")
	require.Equal(t, "APPROVAL_STALE", toolOutputError(t, res)["code"])
	require.Zero(t, countRows(t, h, `SELECT count(*) FROM credit_notes`))

	res = turn("u3", "credit it again")
	e = toolOutputError(t, res)
	require.Equal(t, "APPROVAL_REQUIRED", e["code"])
	again := e["approval_id"].(string)
	require.NotEqual(t, first, again)
	r = h.Do(t, http.MethodPost, "/v1/approvals/"+again+"/approve", approver, map[string]string{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	out := toolOutput(t, turn("u4", "credit it now please"))
	require.Regexp(t, `^CN-\d{4}-000001$`, out["number"])
	require.EqualValues(t, 2000, out["total"])
	require.EqualValues(t, 9000, out["invoice"].(map[string]any)["balance_due"])

	// Spent: the same call asks for a new approval and credits nothing.
	res = turn("u5", "credit it once more")
	e = toolOutputError(t, res)
	require.Equal(t, "APPROVAL_REQUIRED", e["code"])
	require.NotEqual(t, again, e["approval_id"])
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM credit_notes`))
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM audit_events WHERE type = 'credit_note.issued' AND event->>'via' = 'agent:gate-cn'`))
}
