package mcp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// issue-credit-note over MCP meets the same gate: APPROVAL_REQUIRED,
// then, approved, one credit note however many sessions call at once.
func TestApprovedCreditNoteOneWinnerAcrossSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	inv := invoicetest.Issued(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	args := map[string]any{"invoice_id": inv.ID.String(), "reason": "goodwill", "amount": 1500}
	req := openSession(t, b.h.URL, b.clerk, false).call("issue-credit-note", args).error(t)
	require.Equal(t, "APPROVAL_REQUIRED", req.Code)
	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+req.ApprovalID+"/approve", b.approver, map[string]any{})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	sessions := make([]*rawSession, 8)
	for i := range sessions {
		sessions[i] = openSession(t, b.h.URL, b.clerk, false)
	}
	results := make([]toolResult, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.call("issue-credit-note", args)
		}()
	}
	wg.Wait()
	issued := 0
	for _, res := range results {
		if !res.IsError {
			issued++
			continue
		}
		require.True(t, strings.HasPrefix(res.error(t).Code, "APPROVAL_"), res.error(t).Code)
	}
	require.Equal(t, 1, issued)
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM credit_notes`))
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM audit_events WHERE type = 'credit_note.issued'`))
}
