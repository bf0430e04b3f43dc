package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/stretchr/testify/require"
)

// Done when: send-reminder is bound as send-invoice is: over MCP it
// elicits the user's confirmation before anything is mailed, and a
// client that cannot elicit gets CONFIRMATION_REQUIRED; what is ahead
// (list-upcoming-reminders) is a read the agent calls without asking.
func TestSendReminderElicitsFirst(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	b := setup(t, app.Config{Notify: notify.Config{Sender: srv.Sender(t, "invoices@nordlicht.example")}})
	due := invoices.Date{Time: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -10)}
	inv := invoicetest.Issued(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{DueDate: &due})
	args := map[string]any{"invoice_id": inv.ID.String()}
	reminders := func() int { return count(t, b.h, `SELECT count(*) FROM sendings WHERE reminder_level IS NOT NULL`) }

	plain := openSession(t, b.h.URL, b.clerk, false)
	up := plain.call("list-upcoming-reminders", map[string]any{})
	require.False(t, up.IsError, "%s", up.Content)
	require.Contains(t, string(up.StructuredContent), inv.ID.String())
	require.Equal(t, "CONFIRMATION_REQUIRED", plain.call("send-reminder", args).error(t).Code)
	require.Zero(t, reminders())

	a := openSession(t, b.h.URL, b.clerk, true)
	st := a.request("tools/call", map[string]any{"name": "send-reminder", "arguments": args})
	ask := st.next()
	require.Equal(t, "elicitation/create", ask.Method)
	require.Contains(t, string(ask.Params), inv.ID.String())
	require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "decline"}))
	require.Equal(t, "CONFIRMATION_INVALID", st.result().error(t).Code)
	require.Zero(t, reminders())

	st = a.request("tools/call", map[string]any{"name": "send-reminder", "arguments": args})
	ask = st.next()
	require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}))
	res := st.result()
	require.False(t, res.IsError, "%s", res.Content)
	var sn struct {
		ReminderLevel int `json:"reminder_level"`
	}
	require.NoError(t, json.Unmarshal(res.StructuredContent, &sn))
	require.Equal(t, 1, sn.ReminderLevel)
	require.Equal(t, 1, reminders())
	require.Contains(t, srv.Wait(t, 1, 20*time.Second)[0].Subject, "Reminder: invoice "+*inv.Number)
}
