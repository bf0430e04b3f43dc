package mcp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// issue-invoice on a draft that is not yet a legal invoice is an error
// result naming each missing fact with its code, so that the model can
// ask for them; nothing is written and no approval is requested.
func TestIncompleteDraftIsAnErrorResultNamingWhatIsMissing(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.clerk, map[string]any{"name": "No Address Ltd", "currency": "EUR"})
	require.Equal(t, http.StatusCreated, r.StatusCode, string(r.Body))
	var c struct{ ID uuid.UUID }
	r.JSON(t, &c)
	d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &c.ID})
	before := b.written(t)

	e := openSession(t, b.h.URL, b.clerk, false).call("issue-invoice", map[string]any{"invoice_id": d.ID.String()}).error(t)
	require.Equal(t, invoices.CodeInvoiceIncomplete, e.Code)
	require.Len(t, e.Errors, 1)
	require.Equal(t, "customer.address", e.Errors[0].Field)
	require.Equal(t, invoices.MissingBuyerAddress, e.Errors[0].Code)
	require.Contains(t, e.Errors[0].Message, "No Address Ltd")
	require.Empty(t, e.ApprovalID)
	require.Equal(t, before, b.written(t))
}
