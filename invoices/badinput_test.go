package invoices_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// TestBadInput: each bad input is a clear 4xx problem naming the field,
// and nothing is written.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	cid := b.customer.ID.String()
	ok := func(extra map[string]any) map[string]any {
		m := map[string]any{"customer_id": cid, "lines": []any{line("Widget", 1, 100, 2000)}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	manyLines := make([]any, 1001)
	for i := range manyLines {
		manyLines[i] = line("x", 1, 1, 0)
	}
	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		status       int
		code, field  string
	}{
		{"unknown field", "POST", "/v1/invoices", ok(map[string]any{"discount": 5}), 422, "VALIDATION_FAILED", "discount"},
		{"unknown line field", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{map[string]any{"description": "a", "quantity": 1, "unit_amount": 1, "colour": "red"}}}), 422, "VALIDATION_FAILED", "lines.0.colour"},
		{"wrong type", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{map[string]any{"description": "a", "quantity": "two", "unit_amount": 1}}}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"fractional amount", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{map[string]any{"description": "a", "quantity": 1, "unit_amount": 9.99}}}), 422, "VALIDATION_FAILED", "lines.0.unit_amount"},
		{"negative quantity", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{line("a", -1, 100, 0)}}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"zero quantity", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{line("a", 0, 100, 0)}}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"negative amount", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{line("a", 1, -100, 0)}}), 422, "VALIDATION_FAILED", "lines.0.unit_amount"},
		{"tax over 100 %", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{line("a", 1, 100, 10001)}}), 422, "VALIDATION_FAILED", "lines.0.tax_rate_bps"},
		{"unknown currency", "POST", "/v1/invoices", ok(map[string]any{"currency": "XYZ"}), 422, "VALIDATION_FAILED", "currency"},
		{"lower-case currency", "POST", "/v1/invoices", ok(map[string]any{"currency": "eur"}), 422, "VALIDATION_FAILED", "currency"},
		{"1,001 lines", "POST", "/v1/invoices", ok(map[string]any{"lines": manyLines}), 422, "VALIDATION_FAILED", "lines"},
		{"10,000-character description", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{line(strings.Repeat("é", 10000), 1, 1, 0)}}), 422, "VALIDATION_FAILED", "lines.0.description"},
		{"invalid UTF-8", "POST", "/v1/invoices", []byte(`{"customer_id":"` + cid + `","memo":"bad ` + "\xff\xfe" + ` bytes"}`), 422, "VALIDATION_FAILED", "memo"},
		{"due date before issue date", "POST", "/v1/invoices", ok(map[string]any{"due_date": "2001-01-01"}), 422, "VALIDATION_FAILED", "due_date"},
		{"due date not a date", "POST", "/v1/invoices", ok(map[string]any{"due_date": "31/01/2999"}), 422, "VALIDATION_FAILED", "due_date"},
		{"customer does not exist", "POST", "/v1/invoices", ok(map[string]any{"customer_id": uuid.NewString()}), 422, "VALIDATION_FAILED", "customer_id"},
		{"customer id not a UUID", "POST", "/v1/invoices", ok(map[string]any{"customer_id": "42"}), 422, "VALIDATION_FAILED", "customer_id"},
		{"int64 overflow", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{line("a", 99999999999999, 9007199254740991, 0)}}), 422, "AMOUNT_OVERFLOW", "lines.0.unit_amount"},
		{"period ending before it starts", "POST", "/v1/invoices", ok(map[string]any{"service_period": map[string]any{"start": "2026-03-31", "end": "2026-03-01"}}), 422, "VALIDATION_FAILED", "service_period.end"},
		{"supply date and period", "POST", "/v1/invoices", ok(map[string]any{"supply_date": "2026-03-05", "service_period": map[string]any{"start": "2026-03-01", "end": "2026-03-31"}}), 422, "VALIDATION_FAILED", "service_period"},
		{"terms and a due date", "POST", "/v1/invoices", ok(map[string]any{"payment_terms_days": 30, "due_date": "2099-01-01"}), 422, "VALIDATION_FAILED", "payment_terms_days"},
		{"terms beyond a year", "POST", "/v1/invoices", ok(map[string]any{"payment_terms_days": 366}), 422, "VALIDATION_FAILED", "payment_terms_days"},
		{"customer malformed VAT id", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "vat_id": "DE12345678"}, 422, "VALIDATION_FAILED", "vat_id"},
		{"customer VAT id check digit", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "vat_id": "DE136695977"}, 422, "VALIDATION_FAILED", "vat_id"},
		{"customer unknown country", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "address": map[string]any{"country": "XX"}}, 422, "VALIDATION_FAILED", "address.country"},
		{"customer language", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "language": "es"}, 422, "VALIDATION_FAILED", "language"},
		{"customer VAT id on update", "PATCH", "/v1/customers/" + cid, map[string]any{"vat_id": "FR00123456789"}, 422, "VALIDATION_FAILED", "vat_id"},
		{"quantity beyond 14 digits", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{line("a", 100000000000000, 1, 0)}}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"quantity with 5 decimals", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 0), "quantity", "1.23456")}}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"quantity as a JSON fraction", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 0), "quantity", 7.5)}}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"quantity zero", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 0), "quantity", "0.0")}}), 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"unknown unit", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 0), "unit", "HRS")}}), 422, "VALIDATION_FAILED", "lines.0.unit"},
		{"unknown VAT category", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 0), "vat_category", "X")}}), 422, "VALIDATION_FAILED", "lines.0.vat_category"},
		{"standard rate at 0 %", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 0), "vat_category", "S")}}), 422, "VALIDATION_FAILED", "lines.0.tax_rate_bps"},
		{"reverse charge with a rate", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 1900), "vat_category", "AE")}}), 422, "VALIDATION_FAILED", "lines.0.tax_rate_bps"},
		{"exemption on a standard line", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(line("a", 1, 100, 1900), "exemption_reason", "because")}}), 422, "VALIDATION_FAILED", "lines.0.exemption_reason"},
		{"exemption code of another category", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(withLine(line("a", 1, 100, 0), "vat_category", "G"), "exemption_code", "VATEX-EU-AE")}}), 422, "VALIDATION_FAILED", "lines.0.exemption_code"},
		{"exemption code not in VATEX", "POST", "/v1/invoices", ok(map[string]any{"lines": []any{withLine(withLine(line("a", 1, 100, 0), "vat_category", "E"), "exemption_code", "VATEX-EU-999")}}), 422, "VALIDATION_FAILED", "lines.0.exemption_code"},
		{"beyond I-JSON", "POST", "/v1/invoices", []byte(`{"customer_id":"` + cid + `","lines":[{"description":"a","quantity":1,"unit_amount":92233720368547758070}]}`), 422, "VALIDATION_FAILED", "lines.0.unit_amount"},
		{"currency change on update", "PATCH", "/v1/invoices/" + draft.ID.String(), map[string]any{"currency": "USD"}, 422, "VALIDATION_FAILED", "currency"},
		{"id in body and path", "PATCH", "/v1/invoices/" + draft.ID.String(), map[string]any{"invoice_id": uuid.NewString()}, 422, "VALIDATION_FAILED", "invoice_id"},
		{"update to missing customer", "PATCH", "/v1/invoices/" + draft.ID.String(), map[string]any{"customer_id": uuid.NewString()}, 422, "VALIDATION_FAILED", "customer_id"},
		{"update with tax over 100 %", "PATCH", "/v1/invoices/" + draft.ID.String(), map[string]any{"lines": []any{line("a", 1, 1, 20000)}}, 422, "VALIDATION_FAILED", "lines.0.tax_rate_bps"},
		{"customer unknown currency", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "ABC"}, 422, "VALIDATION_FAILED", "currency"},
		{"customer bad email", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "email": "not-an-email"}, 422, "VALIDATION_FAILED", "email"},
		{"customer email override", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "email": "\"\u202eevil\"@example.com"}, 422, "VALIDATION_FAILED", "email"},
		{"customer email invisible", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "email": "\"a\u200bb\"@example.com"}, 422, "VALIDATION_FAILED", "email"},
		{"customer email control", "POST", "/v1/customers", map[string]any{"name": "A", "currency": "EUR", "email": "\"a\u0007\"@example.com"}, 422, "VALIDATION_FAILED", "email"},
		{"customer email override on update", "PATCH", "/v1/customers/" + cid, map[string]any{"email": "\"ap\u2066\"@example.com"}, 422, "VALIDATION_FAILED", "email"},
		{"customer email invisible on invoke", "POST", "/v1/capabilities/create-customer/invoke", map[string]any{"input": map[string]any{"name": "A", "currency": "EUR", "email": "\"a\u00adb\"@example.com"}}, 422, "VALIDATION_FAILED", "email"},
		{"customer empty name", "POST", "/v1/customers", map[string]any{"name": "", "currency": "EUR"}, 422, "VALIDATION_FAILED", "name"},
		{"invoke unknown field", "POST", "/v1/capabilities/create-draft-invoice/invoke", map[string]any{"input": ok(map[string]any{"bogus": true})}, 422, "VALIDATION_FAILED", "bogus"},
		{"invoke envelope unknown field", "POST", "/v1/capabilities/create-draft-invoice/invoke", map[string]any{"input": ok(nil), "extra": 1}, 422, "VALIDATION_FAILED", "extra"},
		{"invoke tax over 100 %", "POST", "/v1/capabilities/create-draft-invoice/invoke", map[string]any{"input": ok(map[string]any{"lines": []any{line("a", 1, 1, 10001)}})}, 422, "VALIDATION_FAILED", "lines.0.tax_rate_bps"},
		{"invoke id not a UUID", "POST", "/v1/capabilities/get-invoice/invoke", map[string]any{"input": map[string]any{"invoice_id": "abc"}}, 422, "VALIDATION_FAILED", "invoice_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.counts(t)
			r := b.h.Do(t, tc.method, tc.path, b.clerk, tc.body)
			p := requireProblem(t, r, tc.status, tc.code)
			requireField(t, p, tc.field)
			require.Equal(t, before, b.counts(t))
		})
	}

	// The draft the updates aimed at is unchanged.
	got, err := invoices.InvoiceGetByID(b.ctx, b.h.Pool, draft.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Version)
	require.Equal(t, "EUR", got.Currency)

	// Ids that are not UUIDs are unknown ids: 404, never 500.
	for _, req := range [][2]string{
		{"GET", "/v1/invoices/not-a-uuid"}, {"PATCH", "/v1/invoices/1"}, {"DELETE", "/v1/invoices/x"},
		{"POST", "/v1/invoices/x/issue"}, {"POST", "/v1/invoices/x/void"}, {"POST", "/v1/invoices/x/mark-paid"},
		{"GET", "/v1/customers/nope"}, {"PATCH", "/v1/customers/nope"},
		{"GET", "/v1/invoices/" + uuid.NewString()}, {"GET", "/v1/customers/" + uuid.NewString()},
	} {
		before := b.counts(t)
		r := b.h.Do(t, req[0], req[1], b.clerk, "{}")
		requireProblem(t, r, http.StatusNotFound, "NOT_FOUND")
		require.Equal(t, before, b.counts(t), fmt.Sprint(req))
	}
	r := b.h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, `{"customer_id": `)
	requireProblem(t, r, http.StatusBadRequest, "MALFORMED_JSON")
	// A missing required field: the registry names it in the message (its
	// field is the enclosing object).
	r = b.h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, `{}`)
	requireProblem(t, r, http.StatusUnprocessableEntity, "VALIDATION_FAILED")
	require.Contains(t, string(r.Body), "customer_id")
}
