package invoices_test

import (
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/page"
	"github.com/stretchr/testify/require"
)

func TestPaginationStable(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	other := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Other"})
	want := map[string]bool{}
	for range 25 {
		d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
		want[d.ID.String()] = true
	}
	seen := map[string]int{}
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		path := "/v1/invoices?limit=10&customer_id=" + b.customer.ID.String()
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := b.h.Do(t, http.MethodGet, path, b.clerk, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		var got page.List[invoices.Invoice]
		r.JSON(t, &got)
		require.LessOrEqual(t, len(got.Data), 10)
		for _, inv := range got.Data {
			seen[inv.ID.String()]++
		}
		// Rows inserted between pages (for this and another customer)
		// neither repeat nor hide what was there.
		invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
		invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &other.ID})
		if !got.HasMore {
			require.Nil(t, got.NextCursor)
			break
		}
		cursor = *got.NextCursor
	}
	for id := range want {
		require.Equal(t, 1, seen[id], "invoice %s seen %d times", id, seen[id])
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "invoice %s seen %d times", id, n)
	}

	// Filters.
	issued := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &other.ID})
	r := b.h.Do(t, http.MethodGet, "/v1/invoices?status=issued", b.clerk, nil)
	var got page.List[invoices.Invoice]
	r.JSON(t, &got)
	require.Len(t, got.Data, 1)
	require.Equal(t, issued.ID, got.Data[0].ID)
	r = b.h.Do(t, http.MethodGet, "/v1/invoices?number="+*issued.Number, b.clerk, nil)
	r.JSON(t, &got)
	require.Len(t, got.Data, 1)
	r = b.h.Do(t, http.MethodGet, "/v1/invoices?created_after=2999-01-01T00:00:00Z", b.clerk, nil)
	r.JSON(t, &got)
	require.Empty(t, got.Data)
	r = b.h.Do(t, http.MethodGet, "/v1/invoices", b.clerk, nil)
	r.JSON(t, &got)
	require.Len(t, got.Data, 20) // the default limit
	require.True(t, got.HasMore)

	// Bad list parameters name themselves.
	for q, field := range map[string]string{
		"limit=0": "limit", "limit=101": "limit", "limit=ten": "limit", "cursor=bm90LWEtY3Vyc29y": "cursor",
		"status=sent": "status", "customer_id=nope": "customer_id", "created_after=yesterday": "created_after", "colour=red": "colour",
	} {
		r := b.h.Do(t, http.MethodGet, "/v1/invoices?"+q, b.clerk, nil)
		requireField(t, requireProblem(t, r, http.StatusUnprocessableEntity, "VALIDATION_FAILED"), field)
	}
	r = b.h.Do(t, http.MethodGet, "/v1/customers?limit=1", b.clerk, nil)
	var cpage page.List[invoices.Customer]
	r.JSON(t, &cpage)
	require.Len(t, cpage.Data, 1)
	require.True(t, cpage.HasMore)
}
