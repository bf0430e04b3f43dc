package invoices_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// approvedIssue drafts an invoice and has its issue approved.
func (b httpBundle) approvedIssue(t *testing.T) string {
	t.Helper()
	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+d.ID.String()+"/issue", b.clerk, nil)
	p := requireProblem(t, r, http.StatusForbidden, approvals.CodeApprovalRequired)
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	return d.ID.String()
}

// subscribe adds a webhook endpoint for the invoice events: an event is
// recorded, in its fact's transaction, as a delivery to each subscribed
// endpoint. Its host never resolves, so the deliveries stay pending.
func (b httpBundle) subscribe(t *testing.T) {
	t.Helper()
	_, err := b.h.Pool.Exec(b.ctx, `INSERT INTO webhook_endpoints (id, url, events, secret, created_by, created_at, updated_at)
		SELECT gen_random_uuid(), 'https://receiver.invalid/hook', $1, 'whsec_dGVzdA==', id, now(), now()
		FROM users WHERE username = 'admin1'`,
		[]string{string(events.InvoiceIssued), string(events.InvoiceVoided), string(events.InvoicePaid), string(events.InvoiceDeleted)})
	require.NoError(t, err)
}

// invoiceEvents returns the invoice events recorded (delivered to the
// endpoint subscribe added), oldest first, with the invoice each carries.
func invoiceEvents(t *testing.T, b httpBundle) ([]events.Type, []invoices.Invoice) {
	t.Helper()
	rows, err := b.h.Pool.Query(b.ctx, `SELECT payload FROM webhook_deliveries ORDER BY event_id`)
	require.NoError(t, err)
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var types []events.Type
	var invs []invoices.Invoice
	for _, p := range payloads {
		var env struct {
			Type events.Type      `json:"type"`
			Data invoices.Invoice `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(p), &env))
		types, invs = append(types, env.Type), append(invs, env.Data)
	}
	return types, invs
}

// Issue, void, mark-paid and delete each record their event, carrying the
// invoice as the API answered it (the issued one with its number).
func TestInvoiceEventsFollowEachEffect(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	b.subscribe(t)
	id := b.approvedIssue(t)
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var issued invoices.Invoice
	r.JSON(t, &issued)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/mark-paid", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)

	other := b.approvedIssue(t)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+other+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.approved(t, http.MethodPost, "/v1/invoices/"+other+"/void", map[string]any{"reason": "duplicate"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)

	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	r = b.h.Do(t, http.MethodDelete, "/v1/invoices/"+d.ID.String(), b.clerk, nil)
	p := requireProblem(t, r, http.StatusForbidden, approvals.CodeApprovalRequired)
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodDelete, "/v1/invoices/"+d.ID.String(), b.clerk, nil)
	require.Equal(t, http.StatusNoContent, r.StatusCode, "%s", r.Body)

	types, invs := invoiceEvents(t, b)
	require.Equal(t, []events.Type{events.InvoiceIssued, events.InvoicePaid, events.InvoiceIssued, events.InvoiceVoided, events.InvoiceDeleted}, types)
	require.Equal(t, issued.Number, invs[0].Number)
	require.Equal(t, invoices.StatusIssued, invs[0].Status)
	require.Equal(t, invoices.StatusPaid, invs[1].Status)
	require.Equal(t, invoices.StatusVoid, invs[3].Status)
	require.Equal(t, d.ID, invs[4].ID)
}

// An issue whose transaction rolls back (here its commit fails on a
// deferred check) records no event, as it issues nothing.
func TestARolledBackIssueRecordsNoEvent(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	b.subscribe(t)
	id := b.approvedIssue(t)
	_, err := b.h.Pool.Exec(b.ctx, `
		CREATE FUNCTION refuse_issue() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused at commit'; END $$;
		CREATE CONSTRAINT TRIGGER refuse_issue AFTER UPDATE ON invoices DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW WHEN (NEW.status = 'issued') EXECUTE FUNCTION refuse_issue();`)
	require.NoError(t, err)
	// Through the capability, as every path runs it (an HTTP client would
	// see 500).
	reg := b.h.App.Capabilities()
	call, err := reg.Prepare(invoices.CapIssue, []byte(`{"invoice_id":"`+id+`"}`))
	require.NoError(t, err)
	clerk, err := identity.UserGetByUsername(b.ctx, b.h.Pool, "clerk1")
	require.NoError(t, err)
	call.Principal, call.Via = clerk.Principal(), capability.PathREST
	_, err = reg.Invoke(b.ctx, call)
	require.ErrorContains(t, err, "refused at commit")
	types, _ := invoiceEvents(t, b)
	require.Empty(t, types)
	var status string
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT status FROM invoices WHERE id = $1`, id).Scan(&status))
	require.Equal(t, "draft", status)
}
