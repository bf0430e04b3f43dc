package notify_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/invoiced/invoiced/quantity"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

const publicURL = "https://invoices.example.com"

type bundle struct {
	ctx    context.Context
	h      *apptest.Harness
	smtp   *mailtest.Server
	tokens map[string]string
}

// setup runs the service with mail on, a real SMTP server, and users:
// clerk (the requester), appr1, appr2, admin (deciders with addresses),
// appr3 (a decider without one), gone (a disabled approver) and clerk2 (a
// clerk, who decides nothing), each with an address unless said.
func setup(t *testing.T, policy approvals.Policy, reminders []notify.Reminder) *bundle {
	t.Helper()
	return setupWith(t, app.Config{Approvals: policy, Notify: notify.Config{Reminders: reminders}})
}

// setupWith is setup with cfg, whose mail sender and public URL it sets.
func setupWith(t *testing.T, cfg app.Config) *bundle {
	t.Helper()
	srv := mailtest.Start(t)
	cfg.Notify.Sender = srv.Sender(t, "Invoiced <billing@example.com>")
	cfg.Notify.PublicURL = publicURL + "/"
	h := apptest.New(t, apptest.Options{Config: cfg})
	b := &bundle{ctx: context.Background(), h: h, smtp: srv, tokens: map[string]string{}}
	for _, u := range []struct {
		name  string
		role  identity.Role
		email string
	}{
		{"clerk", identity.RoleClerk, "clerk@example.com"},
		{"clerk2", identity.RoleClerk, "clerk2@example.com"},
		{"appr1", identity.RoleApprover, "appr1@example.com"},
		{"appr2", identity.RoleApprover, "appr2@example.com"},
		{"admin", identity.RoleAdmin, "admin@example.com"},
		{"appr3", identity.RoleApprover, ""},
		{"gone", identity.RoleApprover, "gone@example.com"},
	} {
		_, tok := h.User(t, u.name, u.role)
		b.tokens[u.name] = tok
		if u.email != "" {
			_, err := h.Pool.Exec(b.ctx, `UPDATE users SET email = $2 WHERE username = $1`, u.name, u.email)
			require.NoError(t, err)
		}
	}
	_, err := h.Pool.Exec(b.ctx, `UPDATE users SET disabled = true WHERE username = 'gone'`)
	require.NoError(t, err)
	return b
}

// request has clerk ask to issue a two-line draft and returns the approval id.
func (b *bundle) request(t *testing.T) (approvalID string, inv *invoices.Invoice) {
	t.Helper()
	c := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Äpfel & Birnen GmbH"})
	inv = invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &c.ID, Lines: []invoices.LineInput{
		{Description: "Consulting", Quantity: 2 * quantity.One, UnitAmount: 5000, TaxRateBPS: 2000},
		{Description: "Travel", Quantity: 1 * quantity.One, UnitAmount: 1234, TaxRateBPS: 0},
	}})
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+inv.ID.String()+"/issue", b.tokens["clerk"], nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	p := r.Problem(t)
	require.Equal(t, approvals.CodeApprovalRequired, p["code"])
	return p["approval_id"].(string), inv
}

func (b *bundle) decide(t *testing.T, who, id, decision string, body any) {
	t.Helper()
	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+id+"/"+decision, b.tokens[who], body)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
}

func recipients(msgs []mailtest.Received) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.To...)
	}
	slices.Sort(out)
	return out
}

// Done when: the approval-needed mail reaches each eligible approver (an
// enabled approver or admin other than the requester) and no one else; a
// decider without an address is skipped and counted. It shows customer,
// total, currency, line count and a link to the request page, with no
// credential in it.
func TestApprovalNeededReachesEachEligibleApproverNotTheRequester(t *testing.T) {
	t.Parallel()
	b := setup(t, approvals.Policy{}, []notify.Reminder{})
	id, inv := b.request(t)
	msgs := b.smtp.Wait(t, 3, 20*time.Second)
	time.Sleep(300 * time.Millisecond) // and nothing more arrives
	msgs = b.smtp.Messages()
	require.Equal(t, []string{"admin@example.com", "appr1@example.com", "appr2@example.com"}, recipients(msgs))
	link := publicURL + "/approvals/" + id
	for _, m := range msgs {
		require.Equal(t, "Approval needed: issue-invoice for Äpfel & Birnen GmbH, 132.34 EUR", m.Subject)
		for _, body := range []string{m.Text, m.HTML} {
			require.Contains(t, body, "132.34 EUR")
			require.Contains(t, body, "EUR")
			require.Contains(t, body, link)
			require.NotContains(t, body, "inv_", "no API token in a mail")
			require.NotContains(t, body, "/approve", "no one-click decision")
		}
		require.Contains(t, m.Text, "Customer:  Äpfel & Birnen GmbH")
		require.Contains(t, m.Text, "Lines:     2")
		require.Contains(t, m.HTML, "Äpfel &amp; Birnen GmbH")
		require.Contains(t, m.Text, "Hello "+strings.TrimSuffix(m.To[0], "@example.com")+",", "greets its recipient by name")
	}
	require.Equal(t, inv.Total, int64(13234))
	require.Equal(t, 1.0, testutil.ToFloat64(b.h.App.NotifySkipped()), "appr3 has no address")
}

// Done when: the reminder reaches only the deciders who have not decided
// (before the request lapses); the decision mail reaches the requester.
func TestReminderReachesTheUndecidedOnlyAndTheDecisionTheRequester(t *testing.T) {
	t.Parallel()
	// Reminded at half its life, on a fake clock: a real one raced River's
	// scheduler (which moves a due job up to 5 s late) against the
	// request's lapse under a loaded CI.
	b, clk := setupClocked(t, []notify.Reminder{{Share: 0.5}})
	r := b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", b.tokens["admin"],
		map[string]any{"capability": "issue-invoice", "currency": "EUR", "min_amount": 100, "approvers": 2})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	id, _ := b.request(t)
	// Each decider's mail first: one sent after its decider decided is
	// not sent to them.
	b.smtp.Wait(t, 3, 20*time.Second)
	b.decide(t, "appr1", id, "approve", nil)
	var due time.Time
	require.Eventually(t, func() bool {
		return b.h.Pool.QueryRow(b.ctx, `SELECT scheduled_at FROM river_job WHERE kind = 'approval.remind' AND state = 'scheduled'`).Scan(&due) == nil
	}, 20*time.Second, 50*time.Millisecond)
	require.Len(t, b.smtp.Messages(), 3, "nothing before its time")
	clk.Advance(due.Sub(clk.Now()))
	msgs := b.smtp.Wait(t, 5, 30*time.Second)
	var reminded []mailtest.Received
	for _, m := range msgs {
		if strings.HasPrefix(m.Subject, "Reminder:") {
			reminded = append(reminded, m)
		}
	}
	require.Equal(t, []string{"admin@example.com", "appr2@example.com"}, recipients(reminded))
	require.Contains(t, reminded[0].Text, "1 of 2 approvals so far")

	b.decide(t, "appr2", id, "approve", nil)
	msgs = b.smtp.Wait(t, 6, 20*time.Second)
	last := msgs[5]
	require.Equal(t, []string{"clerk@example.com"}, last.To)
	require.True(t, strings.HasPrefix(last.Subject, "Approved: issue-invoice for Äpfel & Birnen GmbH"), last.Subject)
	require.Contains(t, last.Text, "usable until")
	require.Contains(t, last.Text, publicURL+"/approvals/"+id)
}

// The requester learns of a denial with its reason, and of a request that
// lapsed.
func TestDenialAndLapseMailTheRequester(t *testing.T) {
	t.Parallel()
	b := setup(t, approvals.Policy{PendingTTL: 2 * time.Second}, []notify.Reminder{})
	denied, _ := b.request(t)
	lapsed, _ := b.request(t)
	b.smtp.Wait(t, 6, 20*time.Second)
	b.decide(t, "appr2", denied, "deny", map[string]any{"reason": "wrong customer"})
	msgs := b.smtp.Wait(t, 7, 20*time.Second)
	require.Equal(t, []string{"clerk@example.com"}, msgs[6].To)
	require.True(t, strings.HasPrefix(msgs[6].Subject, "Denied: "), msgs[6].Subject)
	require.Contains(t, msgs[6].Text, "denied by appr2")
	require.Contains(t, msgs[6].Text, "Reason: wrong customer")

	time.Sleep(2 * time.Second)
	r := b.h.Do(t, http.MethodGet, "/v1/approvals/"+lapsed, b.tokens["clerk"], nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	msgs = b.smtp.Wait(t, 8, 20*time.Second)
	require.Equal(t, []string{"clerk@example.com"}, msgs[7].To)
	require.True(t, strings.HasPrefix(msgs[7].Subject, "Lapsed: "), msgs[7].Subject)
	require.Contains(t, msgs[7].Text, "without a decision")
}

// Done when: with the mail server down the mails wait; once it is back
// they arrive, none twice.
func TestMailServerDownThenUpDeliversEachMailOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, approvals.Policy{}, []notify.Reminder{})
	b.smtp.Down()
	b.request(t)
	// The first attempt of each of the three mails fails.
	require.Eventually(t, func() bool {
		var failed int
		require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(*) FROM river_job WHERE kind = 'mail.send' AND attempt >= 1 AND state IN ('retryable', 'available', 'scheduled')`).Scan(&failed))
		return failed == 3
	}, 20*time.Second, 50*time.Millisecond)
	require.Empty(t, b.smtp.Messages())
	b.smtp.Up(t)
	b.smtp.Wait(t, 3, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	msgs := b.smtp.Messages()
	ids := map[string]int{}
	for _, m := range msgs {
		ids[m.MessageID]++
	}
	require.Len(t, msgs, 3)
	require.Len(t, ids, 3, "three distinct mails, none twice")
}

func TestParseReminders(t *testing.T) {
	t.Parallel()
	r, err := notify.ParseReminders("50%, 12h")
	require.NoError(t, err)
	require.Equal(t, []notify.Reminder{{Share: 0.5}, {Left: 12 * time.Hour}}, r)
	r, err = notify.ParseReminders("none")
	require.NoError(t, err)
	require.Empty(t, r)
	for _, bad := range []string{"", "0%", "100%", "-1h", "soon", "50%,"} {
		_, err := notify.ParseReminders(bad)
		require.Error(t, err, bad)
	}
}
