package web_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// grantAllowance puts in force a standing allowance for clerk's issues in
// EUR, up to 1,000.00 and 5 calls for a day, as an agent asks for one
// through grant-allowance and approver approves it.
func (b *bundle) grantAllowance(t *testing.T, clerk, approver *identity.User, reason string) *allowances.Allowance {
	t.Helper()
	ctx := context.Background()
	ag := &agent{reg: b.h.App.Capabilities(), who: clerk.Principal(), conv: "conv-" + uuid.NewString()[:8]}
	in := map[string]any{"capability": "issue", "customer_ids": nil, "currency": "EUR", "max_total": 100000, "max_count": 5,
		"valid_until": time.Now().UTC().Add(24 * time.Hour).Format(time.RFC3339), "reason": reason}
	_, err := ag.call(ctx, allowances.CapGrant, in)
	pe, ok := problem.As(err)
	require.True(t, ok, "want APPROVAL_REQUIRED, got %v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code, pe.Detail)
	_, err = b.h.App.Approvals().Decide(ctx, approver.Principal(), capability.PathREST, uuid.MustParse(pe.Extra["approval_id"].(string)),
		etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)
	out, err := ag.call(ctx, allowances.CapGrant, in)
	require.NoError(t, err)
	return out.(*allowances.Allowance)
}

// revokedEvents counts allowance id's allowance.revoked audit events.
func (b *bundle) revokedEvents(t *testing.T, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM audit_events WHERE type = 'allowance.revoked' AND subject_id = $1`, id.String()).Scan(&n))
	return n
}

// An approver revokes a standing allowance from the inbox: the service
// revokes it (audited, on the web path, with the form's reason) and the
// inbox no longer lists it. A clerk sees no revoke form and the service
// refuses their forged one; a form without the session's CSRF token is
// refused; revoking it again says it is revoked already. Every refusal
// writes nothing.
func TestInboxRevokesAnAllowance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.user(t, "alice", identity.RoleApprover)
	carl := b.user(t, "carl", identity.RoleClerk)
	al := b.grantAllowance(t, carl, alice, "December's monthly run")
	revoke := "/allowances/" + al.ID.String() + "/revoke"
	ctx := context.Background()
	stillActive := func() {
		t.Helper()
		got, err := b.h.App.Allowances().Get(ctx, al.ID)
		require.NoError(t, err)
		require.Equal(t, allowances.StatusActive, got.Status)
		require.Zero(t, b.revokedEvents(t, al.ID))
	}

	clerk := b.browser(t)
	require.Equal(t, http.StatusSeeOther, clerk.signIn("carl", testPassword).status)
	p := clerk.do(http.MethodGet, "/inbox", nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `data-allowance-id="`+al.ID.String()+`"`)
	require.NotContains(t, p.body, `action="`+revoke+`"`)
	require.NotContains(t, p.body, `>Revoke</button>`)
	res := clerk.do(http.MethodPost, revoke, url.Values{"csrf_token": {csrfOf(t, p)}, "reason": {"forged"}})
	require.Equal(t, http.StatusForbidden, res.status)
	require.Contains(t, res.body, "only enabled approver and admin users revoke allowances")
	stillActive()

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	p = br.do(http.MethodGet, "/inbox", nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `action="`+revoke+`"`)
	csrf := csrfOf(t, p)
	for name, form := range map[string]url.Values{
		"no token":  {"reason": {"run done"}},
		"bad token": {"csrf_token": {csrf + "x"}, "reason": {"run done"}},
	} {
		res := br.do(http.MethodPost, revoke, form)
		require.Equal(t, http.StatusForbidden, res.status, name)
		require.Contains(t, res.body, "the form has expired or did not come from this site", name)
	}
	stillActive()

	res = br.do(http.MethodPost, revoke, url.Values{"csrf_token": {csrf}, "reason": {"  run done  "}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, "/inbox?done=revoked", res.header.Get("Location"))
	got, err := b.h.App.Allowances().Get(ctx, al.ID)
	require.NoError(t, err)
	require.Equal(t, allowances.StatusRevoked, got.Status)
	require.Equal(t, "run done", got.RevokeReason)
	require.Equal(t, "alice", got.RevokedBy.Username)
	require.Equal(t, 1, b.revokedEvents(t, al.ID))
	var via, reason string
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT event->>'via', event->'data'->>'reason' FROM audit_events
		WHERE type = 'allowance.revoked' AND subject_id = $1`, al.ID.String()).Scan(&via, &reason))
	require.Equal(t, string(capability.PathWeb), via)
	require.Equal(t, "run done", reason)

	p = br.do(http.MethodGet, "/inbox?done=revoked", nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "The allowance is revoked: calls it covered ask for an approval again.")
	require.NotContains(t, p.body, `data-allowance-id="`+al.ID.String()+`"`)
	require.NotContains(t, p.body, `action="`+revoke+`"`)

	res = br.do(http.MethodPost, revoke, url.Values{"csrf_token": {csrf}})
	require.Equal(t, http.StatusConflict, res.status)
	require.Contains(t, res.body, `role="alert">Allowance `+al.ID.String()+` is revoked already</p>`)
	require.Contains(t, res.body, `<h1>Inbox</h1>`)
	require.Equal(t, 1, b.revokedEvents(t, al.ID))
}

// issuedBothWays is carl's three invoices: one issued on an approval
// alice decided, one issued under the standing allowance alice approved
// for him ("the monthly run", returned), and one still a draft.
type issuedBothWays struct {
	onApproval, approvalID, underAllowance, draft string
	allowance                                     *allowances.Allowance
}

func (b *bundle) issueBothWays(t *testing.T, alice, carl *identity.User) issuedBothWays {
	t.Helper()
	ctx := context.Background()
	var w issuedBothWays
	ag := b.agent(carl, "conv-issue")
	w.onApproval, w.approvalID = ag.draftAndRequest(t, "Globex GmbH")
	_, err := b.h.App.Approvals().Decide(ctx, alice.Principal(), capability.PathREST, uuid.MustParse(w.approvalID), etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)
	_, err = ag.call(ctx, invoices.CapIssue, map[string]any{"invoice_id": w.onApproval})
	require.NoError(t, err)

	w.allowance = b.grantAllowance(t, carl, alice, "the monthly run")
	out, err := ag.call(ctx, "create-customer", map[string]any{"name": "Initech AG", "email": "ap@initech.example", "currency": "EUR",
		"address": invoicetest.CustomerAddress})
	require.NoError(t, err)
	draft := func() string {
		out, err := ag.call(ctx, invoices.CapCreateDraft, map[string]any{
			"customer_id": out.(*invoices.Customer).ID.String(), "due_date": time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly),
			"lines": []map[string]any{{"description": "Support, December", "quantity": 1, "unit_amount": 40000, "tax_rate_bps": 1900}},
		})
		require.NoError(t, err)
		return out.(*invoices.Invoice).ID.String()
	}
	w.underAllowance, w.draft = draft(), draft()
	out, err = ag.call(ctx, invoices.CapIssue, map[string]any{"invoice_id": w.underAllowance})
	require.NoError(t, err)
	require.Equal(t, invoices.StatusIssued, out.(*invoices.Invoice).Status)
	got, err := b.h.App.Allowances().Get(ctx, w.allowance.ID)
	require.NoError(t, err)
	require.Equal(t, 4, got.RemainingCount, "the second issue drew the allowance")
	return w
}

// An issued invoice's page says what let its issue through: the
// standing allowance it drew, by its short id and reason, or the
// approval it spent, linked; a draft's says neither.
func TestInvoicePageSaysWhatItWasIssuedUnder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.user(t, "alice", identity.RoleApprover)
	carl := b.user(t, "carl", identity.RoleClerk)
	b.named(t, "carl", "Carl Clerk")
	w := b.issueBothWays(t, alice, carl)
	al := w.allowance

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	p := br.do(http.MethodGet, "/invoices/"+w.underAllowance, nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<p id="issued-under">Issued under standing allowance <span title="`+al.ID.String()+`">`+
		al.ID.String()[:8]+`</span> (the monthly run) by Carl Clerk, <time`)
	require.NotContains(t, p.body, `href="/approvals/`)

	p = br.do(http.MethodGet, "/invoices/"+w.onApproval, nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `id="issued-under">Issued on <a href="/approvals/`+w.approvalID+`">approval `+w.approvalID[:8]+`</a></p>`)
	require.NotContains(t, p.body, "standing allowance")

	p = br.do(http.MethodGet, "/invoices/"+w.draft, nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Draft invoice")
	require.NotContains(t, p.body, `id="issued-under"`)
	require.NotContains(t, p.body, "standing allowance")
	require.NotContains(t, p.body, `href="/approvals/`)
}

// TestBrowserAllowancePages drives Debian's chromium through the pages
// this changes (e2e/allowances.mjs): the inbox with an allowance in force
// and its revoke form, both invoice pages, and a revoke; axe-core checks
// each at 1280 and 360 px.
func TestBrowserAllowancePages(t *testing.T) {
	t.Parallel()
	ensureChromium(t)
	node, e2eDir := nodetest.Install(t, "e2e", "axe-core/package.json")
	b := setup(t)
	alice := b.user(t, "alice", identity.RoleApprover)
	carl := b.user(t, "carl", identity.RoleClerk)
	w := b.issueBothWays(t, alice, carl)

	out := t.ArtifactDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "allowances.mjs")
	cmd.Dir = e2eDir
	cmd.Env = append(os.Environ(), "BASE_URL="+b.h.URL, "OUT_DIR="+out, "APPROVER=alice", "PASSWORD="+testPassword,
		"ALLOWANCE_ID="+w.allowance.ID.String(), "ON_APPROVAL_ID="+w.onApproval, "UNDER_ALLOWANCE_ID="+w.underAllowance)
	logs, err := cmd.CombinedOutput()
	t.Logf("node allowances.mjs:\n%s", logs)
	require.NoError(t, err)
	got, err := b.h.App.Allowances().Get(context.Background(), w.allowance.ID)
	require.NoError(t, err)
	require.Equal(t, allowances.StatusRevoked, got.Status)
	require.Equal(t, "The run is done.", got.RevokeReason)
}
