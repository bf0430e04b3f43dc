package steploop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// swappable lets a test write the script once it knows the ids.
type swappable struct {
	mu sync.Mutex
	p  model.Provider
}

func (s *swappable) Name() string { return "swappable" }

func (s *swappable) Stream(ctx context.Context, req model.Request, on model.Events) (model.Step, error) {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	return p.Stream(ctx, req, on)
}

// TestChatIssueInvoiceNeedsARESTApproval runs the whole service: the model
// calls the real issue-invoice, which answers APPROVAL_REQUIRED with a
// data-approval part; an approver approves through the REST API; the next
// user request issues the invoice.
func TestChatIssueInvoiceNeedsARESTApproval(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatIssueInvoiceNeedsARESTApproval(t, mode)
		})
	}
}

func testChatIssueInvoiceNeedsARESTApproval(t *testing.T, mode string) {
	prov := &swappable{}
	h := apptest.New(t, apptest.Options{Config: app.Config{Model: prov}})
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)
	ctx := context.Background()
	draft := invoicetest.Draft(ctx, t, h.Pool, invoicetest.DraftOpts{})
	sc, err := model.NewScripted(model.Script{Rules: []model.ScriptRule{{Match: "issue", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "issue-invoice", Input: json.RawMessage(`{"invoice_id":"` + draft.ID.String() + `"}`)}}},
		{Text: "Issue handled."},
	}}}})
	require.NoError(t, err)
	prov.mu.Lock()
	prov.p = sc
	prov.mu.Unlock()
	b := &bundle{URL: h.URL, Mode: mode}

	res := b.chat(t, clerk, body("conv-issue", userMsg("u1", "issue the invoice")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.NotContains(t, chunkTypes(res.Chunks), "tool-approval-request")
	var approvalID string
	for _, c := range res.Chunks {
		switch c["type"] {
		case "tool-output-available":
			e := c["output"].(map[string]any)["error"].(map[string]any)
			require.Equal(t, "APPROVAL_REQUIRED", e["code"])
			approvalID = e["approval_id"].(string)
		case "data-approval":
			d := c["data"].(map[string]any)
			require.Equal(t, "issue-invoice", d["capability"])
			require.Equal(t, "pending", d["status"])
			require.Equal(t, approvalID, d["approval_id"])
			require.EqualValues(t, 0, d["approvals"], "the UI can show how many approvals remain")
			require.EqualValues(t, 1, d["required_approvals"])
			target := d["target"].(map[string]any)
			require.Equal(t, "invoice", target["type"], "the frontend learns what waits for approval")
			require.Equal(t, draft.ID.String(), target["id"])
		}
	}
	require.NotEmpty(t, approvalID)

	r := h.Do(t, http.MethodPost, "/v1/approvals/"+approvalID+"/approve", approver, map[string]string{"reason": "looks right"})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	_, msgs := b.conversation(t, clerk, "conv-issue")
	res = b.chat(t, clerk, body("conv-issue", anyList(msgs, userMsg("u2", "issue it now, it is approved"))...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	issued := false
	for _, c := range res.Chunks {
		if c["type"] == "tool-output-available" {
			out := c["output"].(map[string]any)
			require.Nil(t, out["error"], "%v", out)
			issued = true
		}
	}
	require.True(t, issued)
	r = h.Do(t, http.MethodGet, "/v1/invoices/"+draft.ID.String(), clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	var inv map[string]any
	r.JSON(t, &inv)
	require.Equal(t, "issued", inv["status"])
}
