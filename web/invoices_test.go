package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

// drafts creates n drafts for a customer named name through the invoice
// capabilities, as clerk.
func (b *bundle) drafts(t *testing.T, clerk *identity.User, name string, n int) []*invoices.Invoice {
	t.Helper()
	ag := b.agent(clerk, "c")
	out, err := ag.call(context.Background(), "create-customer", map[string]any{"name": name, "email": "x@example.com", "currency": "JPY",
		"address": invoicetest.CustomerAddress})
	require.NoError(t, err)
	cust := out.(*invoices.Customer)
	var invs []*invoices.Invoice
	for i := range n {
		out, err := ag.call(context.Background(), "create-draft-invoice", map[string]any{
			"customer_id": cust.ID.String(), "memo": "memo <b>" + name + "</b>",
			"lines": []map[string]any{{"description": "Widget", "quantity": i + 1, "unit_amount": 1000, "tax_rate_bps": 1000}},
		})
		require.NoError(t, err)
		invs = append(invs, out.(*invoices.Invoice))
	}
	return invs
}

func TestInvoicesListFiltersAndPrintableInvoice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clerk := b.user(t, "carl", identity.RoleClerk)
	acme := b.drafts(t, clerk, "Acme KK", 2)
	b.drafts(t, clerk, "Umbrella", 1)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("carl", testPassword).status)

	p := br.do(http.MethodGet, "/invoices", nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Equal(t, 3, strings.Count(p.body, `<a href="/invoices/`))
	require.Contains(t, p.body, "2,200 JPY", "JPY has no minor unit: 2 × 1000 + 10 % tax")
	for _, label := range []string{`for="f-status"`, `for="f-customer"`, `for="f-number"`, `for="f-from"`, `for="f-to"`} {
		require.Contains(t, p.body, label)
	}

	p = br.do(http.MethodGet, "/invoices?customer_id="+acme[0].CustomerID.String(), nil)
	require.Equal(t, 2, strings.Count(p.body, `<a href="/invoices/`))
	require.NotContains(t, p.body, "<td data-label=\"Customer\">Umbrella")
	p = br.do(http.MethodGet, "/invoices?status=issued", nil)
	require.Contains(t, p.body, "No invoices match.")
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	p = br.do(http.MethodGet, "/invoices?from="+tomorrow, nil)
	require.Contains(t, p.body, "No invoices match.")
	p = br.do(http.MethodGet, "/invoices?to="+time.Now().UTC().Format(time.DateOnly), nil)
	require.Equal(t, 3, strings.Count(p.body, `<a href="/invoices/`), "to includes its whole day")
	for _, bad := range []string{"status=bogus", "customer_id=nope", "from=yesterday", "cursor=xyz"} {
		require.Equal(t, http.StatusUnprocessableEntity, br.do(http.MethodGet, "/invoices?"+bad, nil).status, bad)
	}

	p = br.do(http.MethodGet, "/invoices/"+acme[1].ID.String(), nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Draft invoice")
	require.Contains(t, p.body, "Acme KK")
	require.Contains(t, p.body, "memo &lt;b&gt;Acme KK&lt;/b&gt;", "escaped")
	require.Regexp(t, regexp.MustCompile(`<link rel="stylesheet" href="/static/print\.css\?v=[0-9a-f]+" media="print">`), p.body)
	require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/invoices/"+uuid.NewString(), nil).status)
}

func TestInvoicesListPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clerk := b.user(t, "carl", identity.RoleClerk)
	b.drafts(t, clerk, "Acme KK", 51)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("carl", testPassword).status)
	p := br.do(http.MethodGet, "/invoices?status=draft", nil)
	require.Equal(t, 50, strings.Count(p.body, `<a href="/invoices/`))
	m := regexp.MustCompile(`href="(/invoices\?[^"]*cursor=[^"]+)"`).FindStringSubmatch(p.body)
	require.NotNil(t, m, "a next page link")
	next := strings.ReplaceAll(m[1], "&amp;", "&")
	require.Contains(t, next, "status=draft", "filters carry over")
	// Newest first: the last draft made (51 widgets) opens the first page,
	// the first (1 widget) is alone on the second.
	require.Equal(t, "56,100 JPY", invoiceRows(t, p.body)[0]["Total"])
	p = br.do(http.MethodGet, next, nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Equal(t, 1, strings.Count(p.body, `<a href="/invoices/`))
	require.Equal(t, "1,100 JPY", invoiceRows(t, p.body)[0]["Total"])
	require.NotContains(t, p.body, "Next page")
}

var (
	invoiceRowRE  = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	invoiceCellRE = regexp.MustCompile(`(?s)<td data-label="([^"]+)"[^>]*>(.*?)</td>`)
	tagRE         = regexp.MustCompile(`<[^>]+>`)
)

// invoiceRows reads the invoice list's rows: each row's cells by their
// label, as text, in the order the page shows them; the "order" key lists
// the labels.
func invoiceRows(t *testing.T, body string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	for _, tr := range invoiceRowRE.FindAllStringSubmatch(body, -1) {
		cells := invoiceCellRE.FindAllStringSubmatch(tr[1], -1)
		if len(cells) == 0 {
			continue
		}
		row := map[string]string{}
		var order []string
		for _, c := range cells {
			row[c[1]] = strings.TrimSpace(tagRE.ReplaceAllString(c[2], ""))
			order = append(order, c[1])
		}
		row["order"] = strings.Join(order, ", ")
		rows = append(rows, row)
	}
	return rows
}

// A clerk opening /invoices reads the invoice they just made or issued
// first: newest first, each row leading with number, customer, total and
// status.
func TestInvoicesListNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "carl", identity.RoleClerk)
	ctx := context.Background()
	customer := func(name, currency string) *uuid.UUID {
		c := invoicetest.Customer(ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: name, Currency: currency})
		return &c.ID
	}
	// 3 × 150.65 at 19 %: 451.95 + 85.87 (85.8705) tax = 537.82 EUR.
	acme := invoicetest.Issued(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: customer("Acme GmbH", "EUR"),
		Lines: []invoices.LineInput{{Description: "Support", Quantity: 3 * quantity.One, UnitAmount: 15065, TaxRateBPS: 1900}}})
	invoicetest.Draft(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: customer("Umbrella", "USD"), Currency: "USD"})
	globex := invoicetest.Issued(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: customer("Globex Corporation", "EUR")})

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("carl", testPassword).status)
	p := br.do(http.MethodGet, "/invoices", nil)
	require.Equal(t, http.StatusOK, p.status)
	rows := invoiceRows(t, p.body)
	require.Len(t, rows, 3)
	for _, r := range rows {
		require.True(t, strings.HasPrefix(r["order"], "Number, Customer, Total, Status"), r["order"])
	}
	want := []map[string]string{
		{"Number": *globex.Number, "Customer": "Globex Corporation", "Total": "120.00 EUR", "Status": "issued"},
		{"Number": "Draft", "Customer": "Umbrella", "Total": "120.00 USD", "Status": "draft"},
		{"Number": *acme.Number, "Customer": "Acme GmbH", "Total": "537.82 EUR", "Status": "issued"},
	}
	for i, w := range want {
		for k, v := range w {
			require.Equal(t, v, rows[i][k], "row %d, %s", i+1, k)
		}
	}
}

func TestStaleRequestShowsBannerAndNoButtons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ag := b.agent(clerk, "conv-stale")
	invoiceID, approvalID := ag.draftAndRequest(t, "Globex GmbH")

	// The clerk edits the draft after asking: the request no longer
	// describes the invoice.
	_, err := ag.call(context.Background(), "update-draft-invoice", map[string]any{"invoice_id": invoiceID, "memo": "changed after the request"})
	require.NoError(t, err)

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	p := br.do(http.MethodGet, "/approvals/"+approvalID, nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `class="banner"`)
	require.Contains(t, p.body, "The invoice has changed since this request was made (version 1 then, 2 now)")
	require.NotContains(t, p.body, `/approve"`)
}

// Amounts show their currency's digits, grouped, with the code after them:
// the list and the invoice page name the currency, a line's columns are
// numbers under the invoice's currency.
func TestPagesShowAmountsGroupedWithTheirCurrencysDigits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clerk := b.user(t, "carl", identity.RoleClerk)
	ag := b.agent(clerk, "c")
	ids := map[string]string{}
	for _, c := range []struct {
		currency    string
		unit, bps   int64
		description string
	}{
		{"USD", 1500000, 825, "Audit"}, // 15,000.00 + 8.25 % = 16,237.50
		{"JPY", 3700, 1000, "Tea"},     // 3,700 + 370 = 4,070
		{"BHD", 2000, 550, "Dates"},    // 2.000 + 0.110 = 2.110
	} {
		out, err := ag.call(context.Background(), "create-customer", map[string]any{"name": "Buyer " + c.currency, "currency": c.currency})
		require.NoError(t, err)
		out, err = ag.call(context.Background(), "create-draft-invoice", map[string]any{
			"customer_id": out.(*invoices.Customer).ID.String(),
			"lines":       []map[string]any{{"description": c.description, "quantity": 1, "unit_amount": c.unit, "tax_rate_bps": c.bps}},
		})
		require.NoError(t, err)
		ids[c.currency] = out.(*invoices.Invoice).ID.String()
	}
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("carl", testPassword).status)

	p := br.do(http.MethodGet, "/invoices", nil)
	for _, want := range []string{">16,237.50 USD<", ">4,070 JPY<", ">2.110 BHD<"} {
		require.Contains(t, p.body, want)
	}
	p = br.do(http.MethodGet, "/invoices/"+ids["USD"], nil)
	for _, want := range []string{">15,000.00<", ">1,237.50<", ">16,237.50 USD<"} {
		require.Contains(t, p.body, want)
	}
	p = br.do(http.MethodGet, "/invoices/"+ids["BHD"], nil)
	for _, want := range []string{">2.000<", ">0.110<", ">2.110 BHD<"} {
		require.Contains(t, p.body, want)
	}
}
