package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/fakeopenai"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// chatStory is what the fake model answers in the chat page's browser
// story (e2e/chat.mjs), by the clerk's latest message and the model step.
type chatStory struct {
	draftID, customerID string
	// ledgerFailed is set once the model has failed the clerk's first
	// "Check the ledger." (a model request that fails, then one that works).
	ledgerFailed atomic.Bool
}

// storyWords is a story of n words ending in "The end.", streamed slowly
// enough to reload or stop in the middle.
func storyWords(word string, n int) string {
	return "Once upon a time " + strings.Repeat(word+" ", n) + "The end."
}

func (s *chatStory) answer(req fakeopenai.Request) fakeopenai.Reply {
	user, step := req.LastUser(), req.Step()
	call := func(name, args string) fakeopenai.Reply {
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: args}}}
	}
	invoice := `{"invoice_id":"` + s.draftID + `"}`
	switch {
	case strings.Contains(user, "still drafts") && step == 0:
		r := call(invoices.CapListInvoices, `{"status":"draft"}`)
		r.Reasoning = "The clerk asks for drafts: list the invoices whose status is draft."
		return r
	case strings.Contains(user, "still drafts"):
		return fakeopenai.Reply{Text: "There is one draft: **Globex Corporation**, 3,897.00 USD."}
	case strings.Contains(user, "issue the Globex draft") && step == 0,
		strings.Contains(user, "approval came through") && step == 0:
		return call(invoices.CapIssue, invoice)
	case strings.Contains(user, "issue the Globex draft"):
		return fakeopenai.Reply{Text: "Issuing needs an approver's decision; the request is waiting."}
	case strings.Contains(user, "approval came through"):
		var out struct{ Number string }
		results := req.ToolResults()
		if len(results) == 1 && json.Unmarshal([]byte(results[0]), &out) == nil && out.Number != "" {
			return fakeopenai.Reply{Text: "Done: the invoice is issued as **" + out.Number + "**."}
		}
		return fakeopenai.Reply{Text: "It did not go through: " + strings.Join(results, " ")}
	case strings.Contains(user, "Show me that invoice") && step == 0:
		return call("show-invoice", invoice)
	case strings.Contains(user, "Show me that invoice"):
		return fakeopenai.Reply{Text: "It is beside the chat."}
	case strings.Contains(user, "Tell me a story"):
		return fakeopenai.Reply{Text: storyWords("story", 60), WordDelay: 75 * time.Millisecond}
	case strings.Contains(user, "endless tale"):
		return fakeopenai.Reply{Text: storyWords("tale", 400), WordDelay: 50 * time.Millisecond}
	case strings.Contains(user, "Draft an invoice") && step == 0:
		// 900.00 + 74.25 tax, 120.00 + 9.90 tax, 85.50 untaxed: 1,105.50 +
		// 84.15 tax = 1,189.65 USD.
		r := call(invoices.CapCreateDraft, `{"customer_id":"`+s.customerID+`",`+
			`"service_period":{"start":"2026-12-01","end":"2026-12-31"},"payment_terms_days":30,"lines":[`+
			`{"description":"Support, December","quantity":"2","unit":"HUR","unit_amount":45000,"tax_rate_bps":825},`+
			`{"description":"Hosting, December","quantity":1,"unit":"MON","unit_amount":12000,"vat_category":"S","tax_rate_bps":825},`+
			`{"description":"Travel","quantity":1,"unit_amount":8550,"tax_rate_bps":0}]}`)
		r.ArgChunk, r.ArgDelay = 16, 100*time.Millisecond
		return r
	case strings.Contains(user, "Draft an invoice"):
		if results := req.ToolResults(); len(results) == 1 && strings.Contains(results[0], "CONFIRMATION_INVALID") {
			return fakeopenai.Reply{Text: "Understood: no draft."}
		}
		return fakeopenai.Reply{Text: "Drafted it."}
	case strings.Contains(user, "Wait for it"):
		return fakeopenai.Reply{Text: "Here it comes.", WordDelay: 10 * time.Second}
	case strings.Contains(user, "Check the ledger") && !s.ledgerFailed.Swap(true):
		return fakeopenai.Reply{Error: "the model is overloaded"}
	case strings.Contains(user, "Check the ledger"):
		return fakeopenai.Reply{Text: "The ledger is in order."}
	case strings.Contains(user, "something odd"):
		return fakeopenai.Reply{Text: `Here is something odd: <img src=x onerror="window.__xss=1"> and [a link](javascript:window.__xss=2), **bold** all the same.`}
	}
	return fakeopenai.Reply{Text: "You are welcome."}
}

// setupChat is the service behind a fake model answering chatStory, with
// the clerk carl (Carl Clerk), the approver alice (Alice Approver) and a
// draft for Globex Corporation.
func setupChat(t *testing.T) (*bundle, *chatStory, *fakeopenai.Server) {
	t.Helper()
	story := &chatStory{}
	fm := fakeopenai.New(t, story.answer)
	prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: fm.URL + "/v1", APIKey: "test-key", Model: "fake-model", MaxRetries: -1})
	require.NoError(t, err)
	b := &bundle{h: apptest.New(t, apptest.Options{Config: app.Config{Model: prov}})}
	invoicetest.Seller(context.Background(), t, b.h.Pool, nordlicht)
	b.user(t, "alice", identity.RoleApprover)
	b.user(t, "carl", identity.RoleClerk)
	b.named(t, "alice", "Alice Approver")
	b.named(t, "carl", "Carl Clerk")
	ctx := context.Background()
	cust := invoicetest.Customer(ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Globex Corporation", Currency: "USD"})
	// 3 × 1,200.00 at 8.25 %: 3,600.00 + 297.00 tax.
	draft := invoicetest.Draft(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &cust.ID, Currency: "USD",
		Lines: []invoices.LineInput{{Description: "Consulting, 3 days", Quantity: 3 * quantity.One, UnitAmount: 120000, TaxRateBPS: 825}}})
	story.draftID, story.customerID = draft.ID.String(), cust.ID.String()
	return b, story, fm
}

// TestBrowserChatStory is issue 16's story in Chromium: a clerk works
// through the chat page (a read, an issue that waits for an approver, who
// approves in the inbox in a second browser context while the clerk's card
// updates live, a reload mid-answer, Stop, Stop before the first word, a
// failed model request sent again, a bound tool denied then approved,
// untrusted model output, opening the conversation again), with the fake
// OpenAI-compatible model behind the real service, and axe-core checks
// /chat, /inbox and an approval page. It runs on a laptop's window and a
// phone's; at every step the newest message is in view above the message
// box without the test scrolling. Screenshots of each step go to the
// artifact directory.
func TestBrowserChatStory(t *testing.T) {
	t.Parallel()
	ensureChromium(t)
	node, e2eDir := nodetest.Install(t, "e2e", "axe-core/package.json")
	for _, viewport := range []string{"1280x800", "390x844"} {
		t.Run(viewport, func(t *testing.T) {
			t.Parallel()
			chatStoryIn(t, node, e2eDir, viewport)
		})
	}
}

func chatStoryIn(t *testing.T, node, e2eDir, viewport string) {
	b, story, fm := setupChat(t)
	ctx := context.Background()
	draft := uuid.MustParse(story.draftID)

	out := t.ArtifactDir()
	t.Logf("screenshots: %s", out)
	runCtx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "chat.mjs")
	cmd.Dir = e2eDir
	cmd.Env = append(os.Environ(), "BASE_URL="+b.h.URL, "OUT_DIR="+out, "CLERK=carl", "APPROVER=alice", "PASSWORD="+testPassword,
		"DRAFT_ID="+story.draftID, "VIEWPORT="+viewport)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("node chat.mjs:\n%s", stderr.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("the browser story failed (exit %d)", exit.ExitCode())
	}
	require.NoError(t, err)
	var seen struct {
		Number     string `json:"number"`
		ApprovalID string `json:"approvalId"`
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &seen), stdout.String())

	// Issued exactly once, under the approval the approver gave in the
	// inbox, with the number the clerk read.
	inv, err := invoices.InvoiceGetByID(ctx, b.h.Pool, draft)
	require.NoError(t, err)
	require.Equal(t, invoices.StatusIssued, inv.Status)
	require.Equal(t, seen.Number, *inv.Number)
	var issuedEvents int
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued' AND subject_id = $1`, draft.String()).Scan(&issuedEvents))
	require.Equal(t, 1, issuedEvents)
	a := b.approval(t, uuid.MustParse(seen.ApprovalID))
	require.Equal(t, approvals.StatusConsumed, a.Status)
	require.Equal(t, "alice", a.Decisions[0].Approver.Username)

	// The bound tool: asked twice, denied then approved, each call with
	// exactly one result for the model, and one draft made.
	var drafts []string
	for _, r := range fm.Requests() {
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				if c.Function.Name == invoices.CapCreateDraft && !slices.Contains(drafts, c.ID) {
					drafts = append(drafts, c.ID)
				}
			}
		}
	}
	require.Len(t, drafts, 2)
	denied, approved := fm.ToolResults(drafts[0]), fm.ToolResults(drafts[1])
	require.Len(t, denied, 1)
	require.Contains(t, denied[0], "CONFIRMATION_INVALID")
	require.Contains(t, denied[0], "Not this month.", "the clerk's reason reaches the model")
	require.Len(t, approved, 1)
	var made struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(approved[0]), &made), approved[0])
	require.Equal(t, "draft", made.Status)
	var lines int
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT count(*) FROM invoice_lines WHERE description = 'Support, December'`).Scan(&lines))
	require.Equal(t, 1, lines)
	var total int64
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT total FROM invoices i JOIN invoice_lines l ON l.invoice_id = i.id WHERE l.description = 'Support, December'`).Scan(&total))
	require.Equal(t, int64(118965), total, "the total the confirmation showed")

	for _, f := range []string{"chat-1-read.png", "chat-2-waiting.png", "chat-3-approved.png", "chat-3-issued.png", "chat-3-invoice.png",
		"chat-4-resumed.png", "chat-5-stopped.png", "chat-5-stopped-early.png", "chat-5-failed.png", "chat-6-confirm.png", "chat-6-approved.png",
		"chat-7-inert.png", "chat-8-opened.png", "chat-360.png"} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		require.Greater(t, st.Size(), int64(5000), "%s looks empty", f)
	}
	fmt.Fprintln(os.Stderr)
}

// TestBrowserChatErrors: what the chat page says when the server refuses
// (no model configured, to a clerk and to an admin; a message over the
// limit, a session that ended), each a sentence with a way on
// (e2e/chat-errors.mjs).
func TestBrowserChatErrors(t *testing.T) {
	t.Parallel()
	ensureChromium(t)
	node, e2eDir := nodetest.Install(t, "e2e", "axe-core/package.json")
	b, _, _ := setupChat(t)
	noModel := setup(t)
	noModel.user(t, "carl", identity.RoleClerk)
	noModel.user(t, "ada", identity.RoleAdmin)
	control := http.NewServeMux()
	control.HandleFunc("POST /signout", func(w http.ResponseWriter, r *http.Request) {
		_, err := b.h.Pool.Exec(r.Context(), `DELETE FROM web_sessions`)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	ctl := httptest.NewServer(control)
	t.Cleanup(ctl.Close)

	out := t.ArtifactDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "chat-errors.mjs")
	cmd.Dir = e2eDir
	cmd.Env = append(os.Environ(), "BASE_URL="+b.h.URL, "NO_MODEL_URL="+noModel.h.URL, "CONTROL_URL="+ctl.URL,
		"OUT_DIR="+out, "CLERK=carl", "ADMIN=ada", "PASSWORD="+testPassword)
	logs, err := cmd.CombinedOutput()
	t.Logf("node chat-errors.mjs:\n%s", logs)
	require.NoError(t, err)
}
