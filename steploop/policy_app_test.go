package steploop_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// Issue 40, done-when (chat): a void of an issued invoice answers
// APPROVAL_REQUIRED with a data-approval and no confirmation; a payment
// at or above a configured tier is confirmed by the user first (it is
// bound) and then answers APPROVAL_REQUIRED too. Nothing takes effect.
func TestChatVoidAndLargePaymentNeedApproval(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	h.User(t, "approver", identity.RoleApprover)
	_, admin := h.User(t, "admin", identity.RoleAdmin)
	r := h.Do(t, http.MethodPost, "/v1/approval-policy/rules", admin,
		map[string]any{"capability": "record-payment", "currency": "EUR", "min_amount": 500_000, "approvers": 2})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	ctx := context.Background()
	inv := invoicetest.Issued(ctx, t, h.Pool, invoicetest.DraftOpts{
		Lines: []invoices.LineInput{{Description: "Licence", Quantity: quantity.One, UnitAmount: 5_000_000}}}).ID.String()
	today := time.Now().UTC().Format(time.DateOnly)
	scriptInto(t, rec,
		toolRule("void", "void-invoice", `{"invoice_id":"`+inv+`"}`),
		toolRule("pay", "record-payment", `{"invoice_id":"`+inv+`","amount":600000,"received_on":"`+today+`","method":"bank_transfer"}`))
	b := &bundle{URL: h.URL, Mode: fullHistory}

	res := b.chat(t, clerk, body("pol-void", userMsg("u1", "void it")))
	e := toolOutputError(t, res)
	require.Equal(t, "APPROVAL_REQUIRED", e["code"], string(res.Body))
	require.Equal(t, "void-invoice", dataApproval(t, res)["capability"])
	require.NotContains(t, chunkTypes(res.Chunks), "tool-approval-request")

	res = b.chat(t, clerk, body("pol-pay", userMsg("u1", "pay it")))
	require.Contains(t, chunkTypes(res.Chunks), "tool-approval-request", "a payment is bound: the user confirms first")
	_, msgs := b.conversation(t, clerk, "pol-pay")
	res = b.chat(t, clerk, body("pol-pay", answerConfirmation(t, msgs, "record-payment", true)...))
	e = toolOutputError(t, res)
	require.Equal(t, "APPROVAL_REQUIRED", e["code"], string(res.Body))
	require.EqualValues(t, 2, dataApproval(t, res)["required_approvals"])

	require.Equal(t, "issued", invoiceStatus(t, h, clerk, inv))
	require.Zero(t, countRows(t, h, `SELECT count(*) FROM payments`))
	require.Equal(t, 2, countRows(t, h, `SELECT count(*) FROM approval_requests WHERE status = 'pending'`))
}

// Issue 40, done-when (chat run): the run's user is disabled while its
// void waits on the invoice's row, inside the 15 s its credential is
// trusted; the approved void spends nothing and the model reads why.
func TestChatRunOfADisabledRequesterSpendsNothing(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	u, clerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)
	ctx := context.Background()
	inv := invoicetest.Issued(ctx, t, h.Pool, invoicetest.DraftOpts{}).ID.String()
	scriptInto(t, rec, toolRule("void", "void-invoice", `{"invoice_id":"`+inv+`"}`))
	b := &bundle{URL: h.URL, Mode: fullHistory}
	e := toolOutputError(t, b.chat(t, clerk, body("pol-dis", userMsg("u1", "void it"))))
	require.Equal(t, "APPROVAL_REQUIRED", e["code"])
	aid := e["approval_id"].(string)
	r := h.Do(t, http.MethodPost, "/v1/approvals/"+aid+"/approve", approver, map[string]string{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	tx, err := h.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM invoices WHERE id = $1 FOR UPDATE`, inv)
	require.NoError(t, err)
	_, msgs := b.conversation(t, clerk, "pol-dis")
	done := make(chan chatResult, 1)
	go func() { done <- b.chat(t, clerk, body("pol-dis", anyList(msgs, userMsg("u2", "void it now"))...)) }()
	require.Eventually(t, func() bool {
		return countRows(t, h, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, identity.UserSetDisabled(ctx, h.Pool, u.ID, true))
	require.NoError(t, tx.Commit(ctx))

	require.Contains(t, toolErrorText(t, <-done), "is disabled")
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM invoices WHERE id = $1 AND status = 'issued'`, inv))
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM approval_requests WHERE id = $1 AND status = 'approved'`, aid))
	require.Zero(t, countRows(t, h, `SELECT count(*) FROM policy_effects`))
}
