package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// The invoice pages show what was paid and credited and what is still
// owed, and a credit note's request page what it would credit, each
// amount with its currency's grouping and digits.
func TestPagesShowPaidCreditedAndBalance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ada := b.user(t, "ada", identity.RoleApprover)
	tok, err := identity.TokenCreate(context.Background(), b.h.Pool, clerk.ID, "test")
	require.NoError(t, err)
	ctx := context.Background()
	cu := invoicetest.Customer(ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Buyer USD", Currency: "USD"})
	inv := invoicetest.Issued(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &cu.ID, Currency: "USD",
		Lines: []invoices.LineInput{{Description: "Audit", Quantity: 1 * quantity.One, UnitAmount: 1500000, TaxRateBPS: 825}}}) // 16,237.50
	id := inv.ID.String()
	payment := map[string]any{"amount": 1000000, "received_on": time.Now().UTC().Format(time.DateOnly), "method": "bank_transfer", "reference": "ACH 99"}
	// 10,000.00 reaches the payments' seeded tier: one approver.
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/payments", tok, payment)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	_, err = b.h.App.Approvals().Decide(ctx, ada.Principal(), capability.PathREST, uuid.MustParse(r.Problem(t)["approval_id"].(string)),
		etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/payments", tok, payment)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/credit-notes", tok, map[string]any{"reason": "Late delivery", "amount": 123750})
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	approval := r.Problem(t)["approval_id"].(string)

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ada", testPassword).status)
	p := br.do(http.MethodGet, "/approvals/"+approval, nil)
	require.Equal(t, http.StatusOK, p.status)
	for _, want := range []string{"Invoice to be credited", "Credit note as it will be issued", "next in series CN", "Late delivery",
		`id="amount-paid">10,000.00<`, `id="balance-due">6,237.50 USD<`, `id="credit-total">1,237.50 USD<`, `id="balance-after">5,000.00 USD<`} {
		require.Contains(t, p.body, want)
	}
	p = br.do(http.MethodGet, "/inbox", nil)
	require.Contains(t, p.body, `Issue credit note for Buyer USD — <span class="amount">1,237.50 USD</span>`)
	res := br.do(http.MethodPost, "/approvals/"+approval+"/approve", url.Values{"csrf_token": {csrfOf(t, p)}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/credit-notes", tok, map[string]any{"reason": "Late delivery", "amount": 123750})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var cn invoices.CreditNote
	r.JSON(t, &cn)

	p = br.do(http.MethodGet, "/invoices/"+id, nil)
	for _, want := range []string{`id="amount-paid">10,000.00 USD<`, `id="amount-credited">1,237.50 USD<`, `id="balance-due"><strong>5,000.00 USD<`,
		"ACH 99", cn.Number, "Late delivery"} {
		require.Contains(t, p.body, want)
	}
	p = br.do(http.MethodGet, "/invoices", nil)
	require.Contains(t, p.body, `<td data-label="Balance due" class="num">5,000.00 USD</td>`)
}
