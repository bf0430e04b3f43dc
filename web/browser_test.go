package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/debtest"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// chromiumPath is where web/e2e/lib.mjs launches Debian's chromium.
const chromiumPath = "/usr/bin/chromium"

func ensureChromium(t *testing.T) {
	t.Helper()
	debtest.Command(t, chromiumPath, "chromium", "fonts-dejavu-core")
}

// agent invokes capabilities as a clerk's agent would: through a registry
// of the invoice capabilities behind the real approvals gate, on the path
// agent:<conversation>.
type agent struct {
	reg  *capability.Registry
	who  identity.Principal
	conv string
}

func (a *agent) call(ctx context.Context, name string, input any) (any, error) {
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	c, err := a.reg.Prepare(name, raw)
	if err != nil {
		return nil, err
	}
	c.Principal = a.who
	c.Via = capability.AgentPath(a.conv)
	return a.reg.Invoke(ctx, c)
}

// agent is clerk's agent in conversation conv, over the invoice
// capabilities behind the harness's approvals gate.
func (b *bundle) agent(clerk *identity.User, conv string) *agent {
	reg := capability.NewRegistry()
	reg.MustRegister(invoices.Capabilities(invoices.NewService(b.h.Pool, b.h.App.ApprovalGate(), b.h.App.Events(), invoices.Config{}))...)
	return &agent{reg: reg, who: clerk.Principal(), conv: conv}
}

// draftAndRequest creates a customer's draft and asks to issue it; the
// gate answers APPROVAL_REQUIRED with the pending request's id.
func (a *agent) draftAndRequest(t *testing.T, customer string) (invoiceID, approvalID string) {
	t.Helper()
	ctx := context.Background()
	out, err := a.call(ctx, "create-customer", map[string]any{"name": customer, "email": "ap@globex.example", "currency": "EUR",
		"address": invoicetest.CustomerAddress})
	require.NoError(t, err)
	cust := out.(*invoices.Customer)
	out, err = a.call(ctx, "create-draft-invoice", map[string]any{
		"customer_id": cust.ID.String(), "due_date": time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly),
		"lines": []map[string]any{
			{"description": "Consulting, November", "quantity": 3, "unit_amount": 12000, "tax_rate_bps": 1900},
			{"description": "Reference books", "quantity": 1, "unit_amount": 2550, "tax_rate_bps": 700},
		},
	})
	require.NoError(t, err)
	inv := out.(*invoices.Invoice)
	_, err = a.call(ctx, "issue-invoice", map[string]any{"invoice_id": inv.ID.String()})
	pe, ok := problem.As(err)
	require.True(t, ok, "want APPROVAL_REQUIRED, got %v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code, pe.Detail)
	return inv.ID.String(), pe.Extra["approval_id"].(string)
}

// TestBrowserApproverApprovesAgentRequest drives Debian's chromium with
// playwright-core through the inbox: sign in, see the agent's request,
// check the totals and the draft's PDF, approve, issue; a second request appears live; the
// clerk sees no decide buttons on their own request. Screenshots go to
// the test's artifact directory (go test -artifacts keeps them).
func TestBrowserApproverApprovesAgentRequest(t *testing.T) {
	t.Parallel()
	ensureChromium(t)
	node, e2eDir := nodetest.Install(t, "e2e", "axe-core/package.json")

	b := setupSeller(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ag := b.agent(clerk, "conv-"+uuid.NewString()[:8])
	invoiceID, firstID := ag.draftAndRequest(t, "Globex GmbH")

	control := http.NewServeMux()
	control.HandleFunc("POST /issue", func(w http.ResponseWriter, r *http.Request) {
		out, err := ag.call(r.Context(), "issue-invoice", map[string]any{"invoice_id": invoiceID})
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		inv := out.(*invoices.Invoice)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": string(inv.Status), "number": *inv.Number})
	})
	var secondID string
	control.HandleFunc("POST /second", func(w http.ResponseWriter, r *http.Request) {
		_, secondID = ag.draftAndRequest(t, "Initech AG")
		_ = json.NewEncoder(w).Encode(map[string]string{"id": secondID})
	})
	ctl := httptest.NewServer(control)
	t.Cleanup(ctl.Close)

	out := t.ArtifactDir()
	t.Logf("screenshots: %s", out)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "inbox.mjs")
	cmd.Dir = e2eDir
	expect, err := json.Marshal(map[string]string{
		// 3 × 120.00 at 19 % tax 68.40; 1 × 25.50 at 7 % is 1.785, half-even 1.78.
		"subtotal": "385.50", "tax": "70.18", "total": "455.68", "customer": "Globex GmbH", "series": invoices.DefaultNumberPrefix,
	})
	require.NoError(t, err)
	cmd.Env = append(os.Environ(),
		"BASE_URL="+b.h.URL, "CONTROL_URL="+ctl.URL, "OUT_DIR="+out, "FIRST_ID="+firstID,
		"APPROVER=alice", "CLERK=carl", "PASSWORD="+testPassword, "EXPECT="+string(expect))
	logs, err := cmd.CombinedOutput()
	t.Logf("node inbox.mjs:\n%s", logs)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("the browser test failed (exit %d)", exit.ExitCode())
	}
	require.NoError(t, err)

	// What the browser did, checked in the database.
	a := b.approval(t, uuid.MustParse(firstID))
	require.Equal(t, approvals.StatusConsumed, a.Status)
	require.Equal(t, "alice", a.Decisions[0].Approver.Username)
	inv, err := invoices.InvoiceGetByID(context.Background(), b.h.Pool, uuid.MustParse(invoiceID))
	require.NoError(t, err)
	require.Equal(t, invoices.StatusIssued, inv.Status)
	require.Equal(t, int64(45568), inv.Total)
	require.NotEmpty(t, secondID)
	require.Equal(t, approvals.StatusPending, b.approval(t, uuid.MustParse(secondID)).Status)
	for _, f := range []string{"inbox.png", "request.png", "request-360.png", "inbox-live.png", "inbox-360.png", "invoice-print.png", "clerk-request.png"} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		require.Greater(t, st.Size(), int64(5000), "%s looks empty", f)
	}
	fmt.Fprintln(os.Stderr) // keep go test's output readable after node's
}
