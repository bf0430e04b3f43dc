package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/stretchr/testify/require"
)

// Done when: over MCP, send-invoice elicits the user's confirmation
// before anything is mailed; declined, nothing is; accepted, the sending
// is the tool's structured result and the mail goes out. A client that
// cannot elicit gets CONFIRMATION_REQUIRED and nothing is sent.
func TestSendInvoiceElicitsFirst(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	b := setup(t, app.Config{Notify: notify.Config{Sender: srv.Sender(t, "invoices@nordlicht.example")}})
	inv := invoicetest.Issued(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	args := map[string]any{"invoice_id": inv.ID.String()}
	sendings := func() int { return count(t, b.h, `SELECT count(*) FROM sendings`) }

	plain := openSession(t, b.h.URL, b.clerk, false)
	require.Equal(t, "CONFIRMATION_REQUIRED", plain.call("send-invoice", args).error(t).Code)

	a := openSession(t, b.h.URL, b.clerk, true)
	st := a.request("tools/call", map[string]any{"name": "send-invoice", "arguments": args})
	ask := st.next()
	require.Equal(t, "elicitation/create", ask.Method)
	require.Contains(t, string(ask.Params), inv.ID.String())
	require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "decline"}))
	require.Equal(t, "CONFIRMATION_INVALID", st.result().error(t).Code)
	require.Zero(t, sendings())

	st = a.request("tools/call", map[string]any{"name": "send-invoice", "arguments": args})
	ask = st.next()
	require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}))
	res := st.result()
	require.False(t, res.IsError, "%s", res.Content)
	var sn struct {
		MessageID string `json:"message_id"`
		Status    string
	}
	require.NoError(t, json.Unmarshal(res.StructuredContent, &sn))
	require.Equal(t, "queued", sn.Status)
	require.Equal(t, 1, sendings())
	require.Equal(t, sn.MessageID, srv.Wait(t, 1, 20*time.Second)[0].MessageID)
}
