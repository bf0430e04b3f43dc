package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// APPROVAL_REQUIRED over MCP says how far the request is, with the
// members and values of the REST problem for the same call: an invoice
// above the seed policy's 10,000.00 needs two approvers, and after one
// decision it has one of two.
func TestApprovalRequiredSaysHowFarTheRequestIs(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	_, approver2 := b.h.User(t, "approver2", identity.RoleApprover)
	ctx := context.Background()
	d := invoicetest.Draft(ctx, t, b.h.Pool, invoicetest.DraftOpts{
		Lines: []invoices.LineInput{{Description: "Fit-out", Quantity: 1 * quantity.One, UnitAmount: 2_000_000}}})
	cs := sdkSession(t, b.h.URL, b.clerk, nil)
	before := b.written(t)

	call := func() map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "issue-invoice", Arguments: map[string]any{"invoice_id": d.ID.String()}})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Nil(t, res.StructuredContent, "an error result carries no structuredContent")
		var body struct{ Error map[string]any }
		require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*gomcp.TextContent).Text), &body))
		return body.Error
	}
	rest := func() map[string]any {
		t.Helper()
		r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+d.ID.String()+"/issue", b.clerk, map[string]any{})
		require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
		return r.Problem(t)
	}

	first := call()
	require.Equal(t, "APPROVAL_REQUIRED", first["code"])
	require.Equal(t, "pending", first["status"])
	require.EqualValues(t, 0, first["approvals"])
	require.EqualValues(t, 2, first["required_approvals"])
	id := first["approval_id"].(string)
	require.Equal(t, "invoiced://approvals/"+id, first["resource"])
	p := rest()
	for _, k := range []string{"approval_id", "approvals", "required_approvals"} {
		require.Equal(t, p[k], first[k], k)
	}

	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+id+"/approve", b.approver, map[string]any{})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	second := call()
	require.Equal(t, "APPROVAL_REQUIRED", second["code"])
	require.Equal(t, id, second["approval_id"], "the same request, one decision further")
	require.EqualValues(t, 1, second["approvals"])
	require.EqualValues(t, 2, second["required_approvals"])
	p = rest()
	for _, k := range []string{"approval_id", "approvals", "required_approvals"} {
		require.Equal(t, p[k], second[k], k)
	}

	// The second approval lets the call through.
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+id+"/approve", approver2, map[string]any{})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "issue-invoice", Arguments: map[string]any{"invoice_id": d.ID.String()}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	after := b.written(t)
	require.Equal(t, before["invoices"], after["invoices"], "issuing adds no invoice")
	require.Equal(t, before["approval_requests"]+1, after["approval_requests"], "one request for the whole story")
}
