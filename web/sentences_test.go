package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

// named gives username a display name, as an admin would.
func (b *bundle) named(t *testing.T, username, display string) {
	t.Helper()
	_, err := b.h.Pool.Exec(context.Background(), `UPDATE users SET display_name = $2 WHERE username = $1`, username, display)
	require.NoError(t, err)
}

// A new approver reads a request as sentences: what it would do, for
// whom, who asked and where, and what approving lets happen.
func TestApprovalPageSaysWhatApprovingDoes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	b.named(t, "carl", "Carl Clerk")
	b.named(t, "alice", "Alice Approver")
	id := b.request(t, clerk, capability.AgentPath("conv-42"))

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	inbox := br.do(http.MethodGet, "/inbox", nil)
	require.Contains(t, inbox.body, `>Issue invoice for Globex GmbH — <span class="amount">455.68 EUR</span></a>`)
	require.Contains(t, inbox.body, `Agent</span> for Carl Clerk`)
	require.Contains(t, inbox.body, `in the chat (conversation conv-42)`)
	require.NotContains(t, inbox.body, "issue-invoice", "no capability names")

	p := br.do(http.MethodGet, "/approvals/"+id.String(), nil)
	require.Equal(t, http.StatusOK, p.status)
	for _, want := range []string{
		`<title>Issue invoice for Globex GmbH — 455.68 EUR · invoiced</title>`,
		`<h1>Issue invoice for Globex GmbH — <span class="amount">455.68 EUR</span>`,
		`<dd>An agent, for Carl Clerk</dd>`,
		`<dd id="asked-in">the chat<br><span class="muted small">conversation <code>conv-42</code></span></dd>`,
		`<p id="approving-lets">Approving lets Carl Clerk (through the chat&#39;s assistant) issue this invoice once, within 24 h.</p>`,
		`next in series INV`,
		`requested by an agent for Carl Clerk in the chat`,
	} {
		require.Contains(t, p.body, want)
	}
	require.NotContains(t, p.body, "Path")

	res := br.do(http.MethodPost, "/approvals/"+id.String()+"/approve", url.Values{"csrf_token": {csrfOf(t, p)}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	p = br.do(http.MethodGet, res.header.Get("Location"), nil)
	require.Contains(t, p.body, "<strong>approved</strong> by Alice Approver")
	require.NotContains(t, p.body, `id="approving-lets"`, "a decided request has nothing to approve")

	// The requester sees what was asked, and no promise about approving.
	cb := b.browser(t)
	require.Equal(t, http.StatusSeeOther, cb.signIn("carl", testPassword).status)
	require.NotContains(t, cb.do(http.MethodGet, "/approvals/"+b.request(t, clerk, capability.PathREST).String(), nil).body, `id="approving-lets"`)
}

// A request to delete a draft says so, has no number line (a deleted
// draft never gets one), and one that needs more approvers than one says
// how many more; the approved window is the configured one.
func TestDeleteRequestAndQuorumRead(t *testing.T) {
	t.Parallel()
	b := &bundle{h: apptest.New(t, apptest.Options{Config: app.Config{Approvals: approvals.Policy{ApprovedTTL: 90 * time.Minute}}})}
	b.user(t, "alice", identity.RoleApprover)
	b.user(t, "apu", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	invoiceID := uuid.Must(uuid.NewV7()).String()
	del := b.requestCall(t, "delete-invoice", clerk, capability.PathREST,
		capability.Target{Type: "invoice", ID: invoiceID, Version: 1, Amount: 45568, Currency: "EUR", Snapshot: snapshotEUR(invoiceID)})
	big := uuid.Must(uuid.NewV7()).String()
	quorum := b.requestFor(t, clerk, capability.PathMCP,
		capability.Target{Type: "invoice", ID: big, Version: 1, Amount: 1623750, Currency: "EUR", Snapshot: snapshotEUR(big)})

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	p := br.do(http.MethodGet, "/approvals/"+del.String(), nil)
	require.Contains(t, p.body, `<h1>Delete draft invoice for Globex GmbH — <span class="amount">455.68 EUR</span>`)
	require.Contains(t, p.body, `<dd id="asked-in">the API</dd>`)
	require.Contains(t, p.body, `Approving lets carl delete this draft invoice once, within 90 min.`)
	require.Contains(t, p.body, `Invoice as it will be deleted`)
	require.NotContains(t, p.body, "<dt>Number</dt>")
	require.NotContains(t, p.body, "next in series")

	p = br.do(http.MethodGet, "/approvals/"+quorum.String(), nil)
	require.Contains(t, p.body, `<dd id="asked-in">an MCP client (an agent)</dd>`)
	require.Contains(t, p.body, `This request needs 2 more approvals; together they let carl issue this invoice once, within 90 min.`)
	require.True(t, strings.Contains(br.do(http.MethodGet, "/inbox", nil).body, `carl <span class="muted small">via an MCP client (an agent)</span>`))
}

// An issued invoice's page says who asked for it to be issued, where, who
// approved and when it was issued; a draft's says nothing of the kind.
func TestIssuedInvoiceShowsWhoRequestedAndApproved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	b.named(t, "carl", "Carl Clerk")
	b.named(t, "alice", "Alice Approver")
	ag := b.agent(clerk, "conv-77")
	invoiceID, approvalID := ag.draftAndRequest(t, "Globex GmbH")

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	draft := br.do(http.MethodGet, "/invoices/"+invoiceID, nil)
	require.Equal(t, http.StatusOK, draft.status)
	require.NotContains(t, draft.body, `id="issued-by"`)

	p := br.do(http.MethodGet, "/approvals/"+approvalID, nil)
	res := br.do(http.MethodPost, "/approvals/"+approvalID+"/approve", url.Values{"csrf_token": {csrfOf(t, p)}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	_, err := ag.call(context.Background(), "issue-invoice", map[string]any{"invoice_id": invoiceID})
	require.NoError(t, err)

	a := b.approval(t, uuid.MustParse(approvalID))
	issued := br.do(http.MethodGet, "/invoices/"+invoiceID, nil)
	require.Equal(t, http.StatusOK, issued.status)
	section := issued.body[strings.Index(issued.body, `id="issued-by"`):]
	section = section[:strings.Index(section, "</section>")]
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
	require.Contains(t, section, ts(a.CreatedAt)+"</time>: requested by an agent for Carl Clerk in the chat</li>")
	require.Contains(t, section, ts(a.Decisions[0].DecidedAt)+"</time>: approved by Alice Approver</li>")
	require.Contains(t, section, ts(*a.ConsumedAt)+"</time>: issued</li>")
	require.Contains(t, section, `href="/approvals/`+approvalID+`"`)
}
