package invoices_test

import (
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// TestNamesThatShowNothing: the text an approver reads to decide (a
// customer's name, a line's description, a memo, a void reason) is refused
// when it shows nothing or holds a bidirectional control or a control
// character, on every path, naming the field, with nothing written.
func TestNamesThatShowNothing(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	cid := b.customer.ID.String()
	customer := func(name string) map[string]any { return map[string]any{"name": name, "currency": "EUR"} }
	withLine := func(desc string) map[string]any {
		return map[string]any{"customer_id": cid, "lines": []any{line("Widget", 1, 100, 0), line(desc, 1, 100, 0)}}
	}
	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		field        string
	}{
		{"blank customer name", "POST", "/v1/customers", customer("   "), "name"},
		{"invisible customer name", "POST", "/v1/customers", customer("\u200b\u00ad"), "name"},
		{"override and zero width space", "POST", "/v1/customers", customer("\u202e\u200b"), "name"},
		{"override inside a name", "POST", "/v1/customers", customer("Acme \u202eCorp"), "name"},
		{"right-to-left mark", "POST", "/v1/customers", customer("Acme\u200f"), "name"},
		{"Hangul filler", "POST", "/v1/customers", customer("\u3164"), "name"},
		{"line break in a name", "POST", "/v1/customers", customer("Acme\nEvil"), "name"},
		{"lone surrogate in a name", "POST", "/v1/customers", `{"name":"Acme \ud800","currency":"EUR"}`, "name"},
		{"blank name on update", "PATCH", "/v1/customers/" + cid, map[string]any{"name": "\u00a0"}, "name"},
		{"isolate on update", "PATCH", "/v1/customers/" + cid, map[string]any{"name": "\u2066Acme\u2069"}, "name"},
		{"blank line description", "POST", "/v1/invoices", withLine(" \u200b "), "lines.1.description"},
		{"override in a line description", "POST", "/v1/invoices", withLine("Consulting \u202e0001"), "lines.1.description"},
		{"blank description on update", "PATCH", "/v1/invoices/" + draft.ID.String(), map[string]any{"lines": []any{line("\u3000", 1, 1, 0)}}, "lines.0.description"},
		{"override in a memo", "PATCH", "/v1/invoices/" + draft.ID.String(), map[string]any{"memo": "pay to \u202e1234"}, "memo"},
		{"escape in a memo", "POST", "/v1/invoices", map[string]any{"customer_id": cid, "memo": "\x1b[2J"}, "memo"},
		{"override in a void reason", "POST", "/v1/invoices/" + draft.ID.String() + "/void", map[string]any{"reason": "duplicate \u202e"}, "reason"},
		{"invoke blank name", "POST", "/v1/capabilities/create-customer/invoke", map[string]any{"input": customer("\u200d")}, "name"},
		{"invoke override in a description", "POST", "/v1/capabilities/create-draft-invoice/invoke", map[string]any{"input": withLine("\u202eabc")}, "lines.1.description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.counts(t)
			r := b.h.Do(t, tc.method, tc.path, b.clerk, tc.body)
			p := requireProblem(t, r, http.StatusUnprocessableEntity, "VALIDATION_FAILED")
			requireField(t, p, tc.field)
			require.Equal(t, before, b.counts(t))
		})
	}

	// Names in any script, with spaces around them and joiners inside,
	// and memos that break lines, pass.
	for _, name := range []string{"Müller & Søn", "محمد للتجارة", "  Αθήνα  ", "👩\u200d💻 Studio", "Ａcme"} {
		r := b.h.Do(t, http.MethodPost, "/v1/customers", b.clerk, customer(name))
		require.Equal(t, http.StatusCreated, r.StatusCode, "%+q: %s", name, r.Body)
	}
	r := b.h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, map[string]any{"customer_id": cid, "memo": "March\n\tthanks", "lines": []any{line("Café crème", 1, 100, 0)}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
}
