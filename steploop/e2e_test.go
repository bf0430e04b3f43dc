package steploop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/e2etest"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// TestE2EWithTheAISDKClient drives POST /v1/chat with the real ai@7 client
// classes (e2e/chat.e2e.mjs) against the real openai-go path and a fake
// OpenAI-compatible model server, in both request modes (the whole list,
// and the last message only).
func TestE2EWithTheAISDKClient(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"full", "last"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testE2EWithTheAISDKClient(t, mode)
		})
	}
}

func testE2EWithTheAISDKClient(t *testing.T, mode string) {
	node, dir := e2etest.Node(t)
	b := setup(t)
	// The consequential scenario runs against the whole service: the real
	// issue-invoice, approvals gate and REST API, behind the same openai-go
	// path and a fake model server of its own.
	h, draft, appModel := setupE2EApp(t)
	_, appClerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "chat.e2e.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "INVOICED_URL="+b.URL, "INVOICED_TOKEN="+b.Token,
		"INVOICED_APP_URL="+h.URL, "INVOICED_APP_TOKEN="+appClerk, "INVOICED_APPROVER_TOKEN="+approver,
		"INVOICED_DRAFT_ID="+draft.String(), "INVOICED_REQUEST_MODE="+mode)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node chat.e2e.mjs failed:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())

	var out struct {
		ApprovedToolCallID string `json:"approvedToolCallId"`
		DeniedToolCallID   string `json:"deniedToolCallId"`
		FrontendToolCallID string `json:"frontendToolCallId"`
		ApprovalID         string `json:"approvalId"`
		EditRefused        bool   `json:"editRefused"`
		ForgeRefused       bool   `json:"forgeRefused"`
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out), stdout.String())
	require.True(t, out.EditRefused)
	require.True(t, out.ForgeRefused)

	// The approved request issued the draft once, consuming the approval
	// an approver decided through the REST API.
	var status string
	var consumed, issuedEvents int
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT status FROM invoices WHERE id = $1`, draft).Scan(&status))
	require.Equal(t, "issued", status)
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT count(*) FROM approval_requests WHERE id = $1 AND status = 'consumed'`, out.ApprovalID).Scan(&consumed))
	require.Equal(t, 1, consumed)
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued' AND subject_id = $1`, draft.String()).Scan(&issuedEvents))
	require.Equal(t, 1, issuedEvents)
	require.NotEmpty(t, appModel.Requests())

	// Approved once, denied once, edited and forged calls never ran.
	require.Equal(t, 1, b.Reminders("alice"))
	require.Equal(t, 0, b.Reminders("mallory"))

	// Exactly one tool result for the approved call, and the model read
	// the denial as CONFIRMATION_INVALID denied.
	var approvedResults, deniedResults []string
	reqs := b.Model.Requests()
	lastReq := func(id string) []string {
		var found []string
		for _, r := range reqs {
			var here []string
			for _, m := range r.Messages {
				if m.Role == "tool" && m.ToolCallID == id {
					here = append(here, m.Content.(string))
				}
			}
			if len(here) > 0 {
				found = here
			}
		}
		return found
	}
	// The browser's answer to the frontend tool is what the model read.
	frontendResults := lastReq(out.FrontendToolCallID)
	require.Len(t, frontendResults, 1)
	require.JSONEq(t, `{"shown":true}`, frontendResults[0])
	approvedResults = lastReq(out.ApprovedToolCallID)
	deniedResults = lastReq(out.DeniedToolCallID)
	require.Len(t, approvedResults, 1)
	require.JSONEq(t, `{"sent_to":"alice"}`, approvedResults[0])
	require.Len(t, deniedResults, 1)
	var denied struct {
		Error struct {
			Code   string `json:"code"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(deniedResults[0]), &denied))
	require.Equal(t, "CONFIRMATION_INVALID", denied.Error.Code)
	require.Equal(t, "denied", denied.Error.Reason)
	require.True(t, strings.Contains(deniedResults[0], "not today"), "the user's reason reaches the model")
}

// setupE2EApp is the whole service behind the openai provider and a fake
// model server that issues one draft invoice when asked: it returns the
// harness, the draft's id and the fake model.
func setupE2EApp(t *testing.T) (*apptest.Harness, uuid.UUID, *fakeModel) {
	t.Helper()
	prov := &swappable{}
	h := apptest.New(t, apptest.Options{Config: app.Config{Model: prov}})
	draft := invoicetest.Draft(context.Background(), t, h.Pool, invoicetest.DraftOpts{})
	fm := newFakeModelWith(t, model.Script{Rules: []model.ScriptRule{{Match: "issue", Steps: []model.ScriptStep{
		{ToolCalls: []model.ScriptToolCall{{Name: "issue-invoice", Input: json.RawMessage(`{"invoice_id":"` + draft.ID.String() + `"}`)}}},
		{Text: "Issue handled."},
	}}}, Default: []model.ScriptStep{{Text: "Hello there."}}})
	p, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: fm.URL + "/v1", APIKey: "test-key", Model: "fake-model", MaxRetries: -1})
	require.NoError(t, err)
	prov.mu.Lock()
	prov.p = p
	prov.mu.Unlock()
	return h, draft.ID, fm
}
