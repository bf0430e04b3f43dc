package steploop_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/stretchr/testify/require"
)

// Done when: send-invoice is bound: the model's call pauses for the
// user's confirmation in the browser, nothing is mailed or recorded
// until they approve, and a denial mails nothing.
func TestChatSendInvoiceAsksTheBrowserFirst(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	rec := &recordingModel{}
	h := apptest.New(t, apptest.Options{Config: app.Config{Model: rec,
		Notify: notify.Config{Sender: srv.Sender(t, "invoices@nordlicht.example")}}})
	_, clerk := h.User(t, "clerk", identity.RoleClerk)
	ctx := context.Background()
	inv := invoicetest.Issued(ctx, t, h.Pool, invoicetest.DraftOpts{})
	other := invoicetest.Issued(ctx, t, h.Pool, invoicetest.DraftOpts{})
	scriptInto(t, rec,
		toolRule("send it", "send-invoice", `{"invoice_id":"`+inv.ID.String()+`"}`),
		toolRule("send the other", "send-invoice", `{"invoice_id":"`+other.ID.String()+`","to":"ap@elsewhere.example"}`))
	b := &bundle{URL: h.URL, Mode: requestModes[0]}
	sendings := func() int { return countRows(t, h, `SELECT count(*) FROM sendings`) }

	res := b.chat(t, clerk, body("send-1", userMsg("u1", "send it")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Contains(t, chunkTypes(res.Chunks), "tool-approval-request")
	require.Zero(t, sendings(), "nothing recorded before the user confirms")
	_, msgs := b.conversation(t, clerk, "send-1")
	res = b.chat(t, clerk, body("send-1", answerConfirmation(t, msgs, "send-invoice", true)...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Contains(t, chunkTypes(res.Chunks), "tool-output-available")
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM sendings WHERE invoice_id = $1`, inv.ID))
	m := srv.Wait(t, 1, 20*time.Second)[0]
	require.Equal(t, []string{"billing@example.com"}, m.To)
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM audit_events WHERE type = 'invoice.sent' AND event->>'via' = 'agent:send-1'`))

	res = b.chat(t, clerk, body("send-2", userMsg("u1", "send the other")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, msgs = b.conversation(t, clerk, "send-2")
	res = b.chat(t, clerk, body("send-2", answerConfirmation(t, msgs, "send-invoice", false)...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Contains(t, chunkTypes(res.Chunks), "tool-output-denied")
	requireDeniedResults(t, rec.last())
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 1, sendings(), "a denial records nothing")
	require.Len(t, srv.Messages(), 1, "and mails nothing")
}
