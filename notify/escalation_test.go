package notify_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/internal/clocktest"
	"github.com/invoiced/invoiced/internal/e2etest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/stretchr/testify/require"
)

// setupClocked is setup on a running fake clock that the service, its
// reminders and River's schedule all read.
func setupClocked(t *testing.T, reminders []notify.Reminder) (*bundle, *clocktest.Running) {
	t.Helper()
	clk := clocktest.NewRunning()
	return setupWith(t, app.Config{
		Approvals: approvals.Policy{Now: clk.Now},
		Clock:     clk.Now,
		Notify:    notify.Config{Reminders: reminders},
		Webhooks:  webhooks.Config{AllowPrivate: true},
	}), clk
}

// Done when: escalation on a fake clock. A tier that appr1 decides
// escalates to appr2 after 24 h: the request's mail goes to appr1 alone;
// when the fake clock passes 24 h the scheduled job escalates it, mails
// appr2 (and no one else), sends approval.escalated to a webhook receiver
// (verified with the standardwebhooks package) and audits it; appr2 then
// decides. The approvals needed stay one.
func TestEscalationOnAFakeClockMailsWhomItAddsAndSendsTheWebhook(t *testing.T) {
	t.Parallel()
	b, clk := setupClocked(t, []notify.Reminder{})
	recv := e2etest.StartReceiver(t)
	r := b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints", b.tokens["admin"], map[string]any{"url": recv.URL, "events": []string{"approval.escalated"}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var ep struct {
		Secret string `json:"secret"`
	}
	r.JSON(t, &ep)
	recv.SetSecrets(t, ep.Secret)
	r = b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", b.tokens["admin"], map[string]any{
		"capability": "issue-invoice", "currency": "EUR", "min_amount": 0, "approvers": 1,
		"deciders": map[string]any{"users": []string{"appr1"}}, "escalation": map[string]any{"after": "24h", "users": []string{"appr2"}}})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)

	id, _ := b.request(t)
	msgs := b.smtp.Wait(t, 1, 20*time.Second)
	require.Equal(t, []string{"appr1@example.com"}, recipients(msgs), "the tier's deciders alone")
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+id+"/approve", b.tokens["appr2"], nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)

	clk.Advance(24 * time.Hour)
	msgs = b.smtp.Wait(t, 2, 30*time.Second)
	esc := msgs[1]
	require.Equal(t, []string{"appr2@example.com"}, esc.To)
	require.True(t, strings.HasPrefix(esc.Subject, "Escalated to you: approval needed for issue-invoice"), esc.Subject)
	require.Contains(t, esc.Text, publicURL+"/approvals/"+id)
	got := recv.Wait(t, 1, 30*time.Second)
	require.Equal(t, "approval.escalated", got[0].Type)
	require.Equal(t, []int{0}, got[0].VerifiedWith)
	var env struct {
		Data approvals.Approval `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got[0].Envelope, &env))
	require.Equal(t, id, env.Data.ID.String())
	require.NotNil(t, env.Data.Escalation.EscalatedAt)
	require.Equal(t, 1, env.Data.RequiredApprovals)

	b.decide(t, "appr2", id, "approve", nil)
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_events WHERE type = 'approval.escalated' AND subject_id = $1`, id).Scan(&n))
	require.Equal(t, 1, n)
	b.smtp.Wait(t, 3, 20*time.Second)
	time.Sleep(300 * time.Millisecond) // and no one else is mailed
	msgs = b.smtp.Messages()
	require.Len(t, msgs, 3, "the decision's mail to the requester")
	require.Equal(t, []string{"clerk@example.com"}, msgs[2].To)
}

// Done when: reminders on a fake clock. With the default reminders (at
// half the 72 h life and 12 h before it lapses), the jobs wait scheduled
// at the fake clock's 36 h and 60 h; moving the clock past each sends it
// to the deciders who have not decided.
func TestRemindersOnAFakeClock(t *testing.T) {
	t.Parallel()
	b, clk := setupClocked(t, nil)
	r := b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", b.tokens["admin"],
		map[string]any{"capability": "issue-invoice", "currency": "EUR", "min_amount": 100, "approvers": 2})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	id, _ := b.request(t)
	// Each decider's mail first: one sent after its decider decided is
	// not sent to them.
	b.smtp.Wait(t, 3, 20*time.Second)
	b.decide(t, "appr1", id, "approve", nil)
	a, err := b.h.App.Approvals().Get(b.ctx, uuid.MustParse(id))
	require.NoError(t, err)
	var due []time.Time
	require.Eventually(t, func() bool {
		rows, err := b.h.Pool.Query(b.ctx, `SELECT scheduled_at FROM river_job WHERE kind = 'approval.remind' AND state = 'scheduled' ORDER BY scheduled_at`)
		require.NoError(t, err)
		due = due[:0]
		for rows.Next() {
			var at time.Time
			require.NoError(t, rows.Scan(&at))
			due = append(due, at.UTC())
		}
		return len(due) == 2
	}, 20*time.Second, 50*time.Millisecond)
	require.WithinDuration(t, a.CreatedAt.Add(36*time.Hour), due[0], time.Microsecond)
	require.WithinDuration(t, a.CreatedAt.Add(60*time.Hour), due[1], time.Microsecond)
	require.Len(t, b.smtp.Messages(), 3, "nothing before its time")

	for i, at := range []time.Duration{36 * time.Hour, 60 * time.Hour} {
		clk.Advance(a.CreatedAt.Add(at).Sub(clk.Now()))
		msgs := b.smtp.Wait(t, 3+2*(i+1), 30*time.Second)
		var reminded []mailtest.Received
		for _, m := range msgs[3+2*i:] {
			require.True(t, strings.HasPrefix(m.Subject, "Reminder:"), m.Subject)
			reminded = append(reminded, m)
		}
		require.Equal(t, []string{"admin@example.com", "appr2@example.com"}, recipients(reminded))
	}
}

// The approval-needed mail follows the approvals: with a tier that appr1
// alone decides and appr1's approvals handed to appr2, it reaches appr1
// and appr2, and no other approver.
func TestApprovalNeededReachesTheDelegate(t *testing.T) {
	t.Parallel()
	b := setup(t, approvals.Policy{}, []notify.Reminder{})
	r := b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", b.tokens["admin"], map[string]any{
		"capability": "issue-invoice", "currency": "EUR", "min_amount": 0, "approvers": 1,
		"deciders": map[string]any{"users": []string{"appr1"}}})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/delegations", b.tokens["appr1"], map[string]any{
		"delegate": "appr2", "until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	b.request(t)
	b.smtp.Wait(t, 2, 20*time.Second)
	time.Sleep(300 * time.Millisecond) // and nothing more arrives
	require.Equal(t, []string{"appr1@example.com", "appr2@example.com"}, recipients(b.smtp.Messages()))
}
