package mcp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// Issue 40, done-when (MCP): a void of an issued invoice answers
// APPROVAL_REQUIRED with no elicitation; a payment at or above a
// configured tier is confirmed by the client's user (it is bound) and
// then answers APPROVAL_REQUIRED too. Nothing takes effect.
func TestVoidAndLargePaymentNeedApprovalOverMCP(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	_, admin := b.h.User(t, "admin", identity.RoleAdmin)
	r := b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", admin,
		map[string]any{"capability": "record-payment", "currency": "EUR", "min_amount": 500_000, "approvers": 2})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	inv := invoicetest.Issued(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{
		Lines: []invoices.LineInput{{Description: "Licence", Quantity: quantity.One, UnitAmount: 5_000_000}}}).ID.String()
	s := openSession(t, b.h.URL, b.clerk, true)

	void := s.call("void-invoice", map[string]any{"invoice_id": inv}).error(t)
	require.Equal(t, "APPROVAL_REQUIRED", void.Code)
	require.NotEmpty(t, void.ApprovalID)

	st := s.request("tools/call", map[string]any{"name": "record-payment", "arguments": map[string]any{
		"invoice_id": inv, "amount": 600_000, "received_on": time.Now().UTC().Format(time.DateOnly), "method": "bank_transfer"}})
	ask := st.next()
	require.Equal(t, "elicitation/create", ask.Method)
	require.Equal(t, http.StatusAccepted, s.answer(s.id, ask.ID, map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}))
	pay := st.result().error(t)
	require.Equal(t, "APPROVAL_REQUIRED", pay.Code)
	require.NotNil(t, pay.RequiredApprovals)
	require.Equal(t, 2, *pay.RequiredApprovals)

	require.Zero(t, count(t, b.h, `SELECT count(*) FROM payments`))
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM invoices WHERE status = 'issued'`))
	require.Equal(t, 2, count(t, b.h, `SELECT count(*) FROM approval_requests WHERE status = 'pending'`))
}

// Issue 40, done-when (MCP): the session's user is disabled while their
// approved void waits on the invoice's row, after the call was
// authenticated; it spends nothing, and the session's next call is
// refused at the door.
func TestDisabledRequesterCannotSpendOverMCP(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	ctx := context.Background()
	inv := invoicetest.Issued(ctx, t, b.h.Pool, invoicetest.DraftOpts{}).ID.String()
	s := openSession(t, b.h.URL, b.clerk, false)
	void := s.call("void-invoice", map[string]any{"invoice_id": inv}).error(t)
	require.Equal(t, "APPROVAL_REQUIRED", void.Code)
	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+void.ApprovalID+"/approve", b.approver, map[string]any{})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	tx, err := b.h.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM invoices WHERE id = $1 FOR UPDATE`, inv)
	require.NoError(t, err)
	done := make(chan toolResult, 1)
	go func() { done <- s.call("void-invoice", map[string]any{"invoice_id": inv}) }()
	require.Eventually(t, func() bool {
		return count(t, b.h, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}, 10*time.Second, 10*time.Millisecond)
	u, err := identity.TokenAuthenticate(ctx, b.h.Pool, b.clerk)
	require.NoError(t, err)
	require.NoError(t, identity.UserSetDisabled(ctx, b.h.Pool, u.ID, true))
	require.NoError(t, tx.Commit(ctx))

	res := <-done
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].Text, "is disabled")
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM invoices WHERE status = 'issued'`))
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM approval_requests WHERE status = 'approved'`))
	require.Zero(t, count(t, b.h, `SELECT count(*) FROM policy_effects`))
	resp := s.post(s.id, map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call",
		"params": map[string]any{"name": "void-invoice", "arguments": map[string]any{"invoice_id": inv}}})
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
