package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mcp"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// e2eOut is what e2e/mcp/mcp.e2e.mjs saw.
type e2eOut struct {
	ProtocolVersion string
	Capabilities    struct{ Tools, Subscribe, Prompts bool }
	Instructions    string
	ServerInfo      struct{ Name, Title, Version string }
	Tools           map[string]struct {
		Title        string
		Annotations  map[string]any
		InputSchema  json.RawMessage
		OutputSchema json.RawMessage
		Description  string
	}
	GetInvoice          map[string]any
	AcceptedElicitation struct {
		Message         string
		RequestedSchema map[string]any
	}
	Created                         map[string]any
	Declined, Cancelled             toolError
	Unticked, NoElicitation         toolError
	Invalid, UnknownField, Required toolError
	Again, Expired                  toolError
	PendingStatus, ApprovedStatus   string
	ConsumedStatus, ApproverReads   string
	UpdatesA, UpdatesB              []string
	Issued, InvoiceResource         map[string]any
	CustomerResource                map[string]any
	Resources, Templates, Prompts   []string
	PromptText                      string
	ApproverCapabilities            struct{ Tools bool }
}

// toolError is the body of an error result.
type toolError struct {
	Code           string
	Message        string
	Reason         string
	ConfirmationID string `json:"confirmation_id"`
	UserReason     string `json:"user_reason"`
	ApprovalID     string `json:"approval_id"`
	Status         string
	Resource       string
	// Approvals and RequiredApprovals are nil when the body has none.
	Approvals         *int `json:"approvals"`
	RequiredApprovals *int `json:"required_approvals"`
	Errors            []struct{ Field, Code, Message string }
}

// TestE2EWithTheTypeScriptSDK drives /mcp with the official TypeScript
// SDK: two replicas over one database, the second with confirmations
// that expire after a second.
func TestE2EWithTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node, dir := e2eNode(t)
	ctx := context.Background()
	h := apptest.New(t, apptest.Options{Config: app.Config{Version: "v1.2.3-e2e"}})
	b := h.Replica(t, apptest.Options{Config: app.Config{MCP: mcp.Options{ConfirmTTL: time.Second}}})
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	_, approver := h.User(t, "approver", identity.RoleApprover)
	draft := invoicetest.Draft(ctx, t, h.Pool, invoicetest.DraftOpts{})

	cmd := exec.CommandContext(ctx, node, "mcp.e2e.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "INVOICED_MCP_URL_A="+h.URL, "INVOICED_MCP_URL_B="+b.URL,
		"INVOICED_CLERK_TOKEN="+clerk, "INVOICED_APPROVER_TOKEN="+approver,
		"INVOICED_DRAFT_ID="+draft.ID.String(), "INVOICED_CUSTOMER_ID="+draft.CustomerID.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Run(), "node mcp.e2e.mjs failed:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	var out e2eOut
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out), stdout.String())

	require.Equal(t, "2025-11-25", out.ProtocolVersion)
	require.Equal(t, struct{ Tools, Subscribe, Prompts bool }{true, true, true}, out.Capabilities)
	require.Contains(t, out.Instructions, "APPROVAL_REQUIRED")
	require.Equal(t, struct{ Name, Title, Version string }{"invoiced", "invoiced back office", "v1.2.3-e2e"}, out.ServerInfo)
	checkTools(t, h, out)
	// A draft read alone says whether it may be issued: this one may (the
	// factory's customer has an address, apptest's seller the rest).
	draft.Readiness = &invoices.Readiness{Ready: true, Missing: []problem.FieldError{}}
	var want map[string]any
	b2, err := json.Marshal(draft)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b2, &want))
	require.Equal(t, want, out.GetInvoice, "get-invoice returns the draft as REST does")
	checkCalls(t, h, out)
	checkApproval(t, h, out, draft.ID.String())
	checkResources(t, out, draft.ID.String(), draft.CustomerID.String())
}

// checkTools: the tools are the capabilities, with hints from risk.
func checkTools(t *testing.T, h *apptest.Harness, out e2eOut) {
	descs := h.App.Capabilities().Descriptors()
	require.Len(t, out.Tools, len(descs))
	for _, d := range descs {
		tool, ok := out.Tools[d.Name]
		require.True(t, ok, d.Name)
		require.NotEmpty(t, d.Title, d.Name)
		require.Equal(t, d.Title, tool.Title, d.Name)
		require.Equal(t, d.Title, tool.Annotations["title"], d.Name)
		require.Equal(t, d.Description, tool.Description)
		require.JSONEq(t, string(d.InputSchema), string(tool.InputSchema), d.Name)
		require.JSONEq(t, string(d.OutputSchema), string(tool.OutputSchema), d.Name)
		require.Equal(t, d.OpenWorld, tool.Annotations["openWorldHint"], d.Name)
	}
	hints := func(name string) map[string]any {
		a := maps.Clone(out.Tools[name].Annotations)
		delete(a, "title")
		return a
	}
	// A read changes nothing, however often; creating a customer or a
	// draft and recording a payment only add a record; the rest change or
	// end what is there, and a repeat of some finds nothing left to do.
	for _, name := range []string{"get-invoice", "list-invoices", "receivables-report"} {
		require.Equal(t, map[string]any{"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}, hints(name), name)
	}
	for _, name := range []string{"create-customer", "create-draft-invoice", "record-payment"} {
		require.Equal(t, map[string]any{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}, hints(name), name)
	}
	for _, name := range []string{"update-customer", "update-draft-invoice", "issue-credit-note"} {
		require.Equal(t, map[string]any{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}, hints(name), name)
	}
	for _, name := range []string{"issue-invoice", "delete-invoice", "void-invoice", "mark-invoice-paid", "reverse-payment"} {
		require.Equal(t, map[string]any{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}, hints(name), name)
	}
	// A mail adds a sending, and reaches the customer: the open world.
	for _, name := range []string{"send-invoice", "send-credit-note"} {
		require.Equal(t, map[string]any{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true}, hints(name), name)
	}
}

// checkCalls: the read tool, both confirmation modes, the refusals.
func checkCalls(t *testing.T, h *apptest.Harness, out e2eOut) {
	ctx := context.Background()

	// Accepted: the form named the capability and the effective input
	// (defaults included); one customer made; the confirmation approved.
	require.Contains(t, out.AcceptedElicitation.Message, "create-customer")
	require.Contains(t, out.AcceptedElicitation.Message, `"email": "ap@elicited.example"`)
	require.Equal(t, []any{"confirm"}, out.AcceptedElicitation.RequestedSchema["required"])
	require.Equal(t, "Elicited Ltd", out.Created["name"])
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM customers WHERE name = 'Elicited Ltd'`))
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM confirmations WHERE capability = 'create-customer' AND decision = 'approved' AND conversation_id LIKE 'mcp:%'`))
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM audit_events WHERE type = 'customer.created' AND event->>'via' = 'mcp'`))

	require.Equal(t, toolError{Code: "CONFIRMATION_INVALID", Reason: "denied"}, trimmed(out.Declined))
	require.Equal(t, toolError{Code: "CONFIRMATION_INVALID", Reason: "cancelled"}, trimmed(out.Cancelled))
	require.Contains(t, out.Cancelled.Message, "dismissed")
	require.Equal(t, "wrong customer", out.Unticked.UserReason)
	require.Equal(t, "CONFIRMATION_REQUIRED", out.NoElicitation.Code)
	require.NotEmpty(t, out.NoElicitation.ConfirmationID)
	require.Contains(t, out.NoElicitation.Message, "cannot ask the user")
	require.Equal(t, "CONFIRMATION_INVALID", out.Expired.Code)
	require.Equal(t, "expired", out.Expired.Reason)
	require.Equal(t, 0, count(t, h, `SELECT count(*) FROM customers WHERE name IN ('Declined Ltd', 'Cancelled Ltd', 'Unticked Ltd', 'Two Phase Ltd', 'Too Late Ltd')`))

	require.Equal(t, "VALIDATION_FAILED", out.Invalid.Code)
	require.Equal(t, "lines.0.quantity", out.Invalid.Errors[0].Field)
	require.Equal(t, "colour", out.UnknownField.Errors[0].Field)
	var drafts int
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT count(*) FROM invoices`).Scan(&drafts))
	require.Equal(t, 1, drafts, "the refused draft was not written")
}

// checkApproval: APPROVAL_REQUIRED, the notification on both replicas,
// one issue.
func checkApproval(t *testing.T, h *apptest.Harness, out e2eOut, draftID string) {
	require.Equal(t, "APPROVAL_REQUIRED", out.Required.Code)
	require.Equal(t, "pending", out.Required.Status)
	uri := "invoiced://approvals/" + out.Required.ApprovalID
	require.Equal(t, uri, out.Required.Resource)
	require.Equal(t, ptr(0), out.Required.Approvals, "as the REST problem says how far the request is")
	require.Equal(t, ptr(1), out.Required.RequiredApprovals)
	require.Equal(t, "pending", out.PendingStatus)
	require.Contains(t, out.UpdatesA, uri)
	require.Contains(t, out.UpdatesB, uri)
	require.Equal(t, "approved", out.ApprovedStatus)
	require.Equal(t, "issued", out.Issued["status"])
	require.NotEmpty(t, out.Issued["number"])
	require.Equal(t, "INVALID_TRANSITION", out.Again.Code)
	require.Equal(t, "consumed", out.ConsumedStatus)
	require.Equal(t, "consumed", out.ApproverReads)
	require.False(t, out.ApproverCapabilities.Tools)
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued' AND subject_id = '`+draftID+`'`))
	require.Equal(t, 1, count(t, h, `SELECT count(*) FROM approval_requests WHERE requested_via = 'mcp' AND status = 'consumed'`))
}

func checkResources(t *testing.T, out e2eOut, draftID, customerID string) {
	require.ElementsMatch(t, []string{"invoiced://invoices", "invoiced://customers", "invoiced://approvals"}, out.Resources)
	require.ElementsMatch(t, []string{"invoiced://invoices/{invoice_id}", "invoiced://customers/{customer_id}", "invoiced://approvals/{approval_id}"}, out.Templates)
	require.Equal(t, draftID, out.InvoiceResource["id"])
	require.Equal(t, customerID, out.CustomerResource["id"])
	require.ElementsMatch(t, []string{"review-overdue-invoices", "prepare-monthly-drafts"}, out.Prompts)
	require.Contains(t, out.PromptText, "2026-12-01")
}

func ptr[T any](v T) *T { return &v }

// trimmed keeps what a table compares: code and reason.
func trimmed(e toolError) toolError { return toolError{Code: e.Code, Reason: e.Reason} }

func count(t *testing.T, h *apptest.Harness, q string) int {
	t.Helper()
	var n int
	require.NoError(t, h.Pool.QueryRow(context.Background(), q).Scan(&n))
	return n
}

// e2eNode returns Node.js and e2e/mcp with its pinned packages installed.
func e2eNode(t *testing.T) (node, dir string) {
	t.Helper()
	// The newest package of the lockfile: a node_modules older than it
	// is installed again.
	return nodetest.Install(t, "../e2e/mcp", "mcp-remote/package.json")
}
