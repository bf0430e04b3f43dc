package invoices_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// setupAging runs the service in Europe/Berlin at 2026-04-28 00:30 CEST,
// which is still 2026-04-27 in UTC, a month after the change to summer
// time (2026-03-29): a day counted in UTC, or as 24 hours, lands in the
// wrong bucket.
func setupAging(t *testing.T) httpBundle {
	t.Helper()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	now := time.Date(2026, 4, 28, 0, 30, 0, 0, berlin)
	h := apptest.New(t, apptest.Options{Config: app.Config{Invoices: invoices.Config{
		BusinessTimeZone: berlin, Now: func() time.Time { return now },
	}}})
	_, clerk := h.User(t, "clerk1", identity.RoleClerk)
	_, approver := h.User(t, "approver1", identity.RoleApprover)
	b := httpBundle{ctx: t.Context(), h: h, clerk: clerk, approver: approver}
	b.customer = invoicetest.Customer(b.ctx, t, h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})
	return b
}

// owing issues an invoice of amount (no tax) due days before 2026-04-28
// (nil: no due date) to customer.
func (b httpBundle) owing(t *testing.T, customer uuid.UUID, currency string, amount int64, daysPastDue *int) *invoices.Invoice {
	t.Helper()
	var due *invoices.Date
	if daysPastDue != nil {
		d := invoices.Date{Time: time.Date(2026, 4, 28, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -*daysPastDue)}
		due = &d
	}
	return invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &customer, Currency: currency, DueDate: due,
		Lines: []invoices.LineInput{{Description: "Work", Quantity: 1 * quantity.One, UnitAmount: amount}}})
}

func days(n int) *int { return &n }

// receivables gets the report for query, and the names of the customers
// it lists.
func (b httpBundle) receivables(t *testing.T, query string) (invoices.Receivables, []string) {
	t.Helper()
	r := b.h.Do(t, http.MethodGet, "/v1/reports/receivables"+query, b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var rep struct {
		invoices.Receivables
		Customers *struct {
			Data []struct {
				CustomerID uuid.UUID        `json:"customer_id"`
				Name       string           `json:"name"`
				Balances   []invoices.Aging `json:"balances"`
			}
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		} `json:"customers"`
	}
	r.JSON(t, &rep)
	var names []string
	if rep.Customers != nil {
		for _, c := range rep.Customers.Data {
			names = append(names, c.Name)
		}
	}
	return rep.Receivables, names
}

// Aging at the bucket boundaries, in the business time zone, across a DST
// change: due today is current, 1 and 30 days past due are 1–30, 31 and
// 60 are 31–60, 61 and 90 are 61–90, 91 is over 90. What was paid or
// credited does not count; drafts, void and paid invoices owe nothing.
func TestReceivablesAgingAtTheBoundaries(t *testing.T) {
	t.Parallel()
	b := setupAging(t)
	c := b.customer.ID
	// Each amount a power of two, so a bucket's sum says which invoices
	// it holds.
	byDays := map[int]int64{0: 1, 1: 2, 30: 4, 31: 8, 60: 16, 61: 32, 90: 64, 91: 128}
	overdue := map[uuid.UUID]bool{}
	for d, amount := range byDays {
		inv := b.owing(t, c, "EUR", amount*100, days(d))
		overdue[inv.ID] = d > 0
	}
	b.owing(t, c, "EUR", 25600, days(-5)) // not yet due
	b.owing(t, c, "EUR", 51200, nil)      // no due date
	partly := b.owing(t, c, "EUR", 100000, days(45))
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+partly.ID.String()+"/payments", b.clerk,
		map[string]any{"amount": 40000, "received_on": "2026-04-20", "method": "bank_transfer"})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	overdue[partly.ID] = true
	paid := b.owing(t, c, "EUR", 999900, days(200))
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodPost, "/v1/invoices/"+paid.ID.String()+"/mark-paid", b.clerk, nil).StatusCode)
	invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &c})
	yen := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Sakura KK", Currency: "JPY"})
	b.owing(t, yen.ID, "JPY", 4072, days(31))

	rep, _ := b.receivables(t, "")
	require.Equal(t, "2026-04-28", rep.AsOf.String())
	require.Equal(t, "Europe/Berlin", rep.TimeZone)
	require.Equal(t, []invoices.Aging{
		{Currency: "EUR", Invoices: 11, Current: (1 + 256 + 512) * 100, Days1To30: (2 + 4) * 100, Days31To60: (8+16)*100 + 60000,
			Days61To90: (32 + 64) * 100, Over90: 128 * 100, Total: 102300 + 60000},
		{Currency: "JPY", Invoices: 1, Days31To60: 4072, Total: 4072},
	}, rep.Currencies)

	// The agent reads the same report.
	r = b.h.Do(t, http.MethodPost, "/v1/capabilities/receivables-report/invoke", b.clerk, map[string]any{"input": map[string]any{}})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var out struct{ Output invoices.Receivables }
	r.JSON(t, &out)
	require.Equal(t, rep.Currencies, out.Output.Currencies)

	// ?overdue=true: past due and owing, never due today.
	var list struct{ Data []invoices.Invoice }
	r = b.h.Do(t, http.MethodGet, "/v1/invoices?overdue=true&limit=100", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &list)
	got := map[uuid.UUID]bool{}
	for _, inv := range list.Data {
		require.True(t, inv.Overdue)
		got[inv.ID] = true
	}
	want := map[uuid.UUID]bool{}
	for id, late := range overdue {
		if late {
			want[id] = true
		}
	}
	require.Len(t, list.Data, 8+1, "1, 30, 31, 60, 61, 90, 91 days, the partly paid one, and the yen invoice")
	for id := range want {
		require.True(t, got[id], "overdue invoice %s missing", id)
	}
	r = b.h.Do(t, http.MethodGet, "/v1/invoices?overdue=false&limit=100", b.clerk, nil)
	r.JSON(t, &list)
	require.Len(t, list.Data, 14-9, "due today, not yet due, no due date, paid, draft")
	for _, inv := range list.Data {
		require.False(t, inv.Overdue, inv.ID)
	}
}

// By customer: a page of the customers that owe, each by currency.
func TestReceivablesByCustomer(t *testing.T) {
	t.Parallel()
	b := setupAging(t)
	names := []string{"Αθήνα Α.Ε.", "Łódź Sp. z o.o.", "Москва ООО"}
	for i, name := range names {
		cu := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: name, Currency: "EUR"})
		b.owing(t, cu.ID, "EUR", int64(i+1)*1000, days(10))
		if i == 1 {
			b.owing(t, cu.ID, "USD", 500, nil)
		}
	}
	rep, listed := b.receivables(t, "?by=customer&limit=2")
	require.Equal(t, names[:2], listed)
	r := b.h.Do(t, http.MethodGet, "/v1/reports/receivables?by=customer&limit=2", b.clerk, nil)
	var page struct {
		Customers struct {
			Data []struct {
				Name     string
				Balances []invoices.Aging
			}
			NextCursor string `json:"next_cursor"`
		}
	}
	r.JSON(t, &page)
	require.Len(t, page.Customers.Data[1].Balances, 2)
	require.Equal(t, invoices.Aging{Currency: "USD", Invoices: 1, Current: 500, Total: 500}, page.Customers.Data[1].Balances[1])
	require.Len(t, rep.Currencies, 2, "the totals cover every customer")
	_, listed = b.receivables(t, "?by=customer&limit=2&cursor="+url.QueryEscape(page.Customers.NextCursor))
	require.Equal(t, names[2:], listed)

	for _, q := range []struct{ query, field string }{{"?by=region", "by"}, {"?cursor=abc", "cursor"}, {"?by=customer&limit=0", "limit"}} {
		r := b.h.Do(t, http.MethodGet, "/v1/reports/receivables"+q.query, b.clerk, nil)
		requireField(t, requireProblem(t, r, http.StatusUnprocessableEntity, "VALIDATION_FAILED"), q.field)
	}
}
