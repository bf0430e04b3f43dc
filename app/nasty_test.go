package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/server"
	"github.com/stretchr/testify/require"
)

// TestNastyRequests sends deliberately hostile requests and checks each
// refusal names its code (and field, where one is to blame), on top of
// everything FuzzAPI checks.
func TestNastyRequests(t *testing.T) {
	t.Parallel()
	env := fuzzSetup(t)
	// A pending approval, for decisions that get as far as the reason.
	var inv struct{ ID string }
	resp := env.h.Do(t, "POST", "/v1/invoices", env.tokens[1], map[string]any{"customer_id": env.customer,
		"lines": []any{map[string]any{"description": "More work", "quantity": 1, "unit_amount": 100}}})
	require.Equal(t, 201, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &inv)
	resp = env.h.Do(t, "POST", "/v1/invoices/"+inv.ID+"/issue", env.tokens[1], nil)
	require.Equal(t, 403, resp.StatusCode, string(resp.Body))
	pending, _ := resp.Problem(t)["approval_id"].(string)
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	const line = `"lines":[{"description":"Work","quantity":%s,"unit_amount":%s}]`
	lines := func(q, a string) string { return fmt.Sprintf(line, q, a) }
	cases := []struct {
		name         string
		method, path string
		role         uint8
		query        string
		body         string
		status       int
		code, field  string
	}{
		{"huge quantity", "POST", "/v1/invoices", 1, "", `{"customer_id":"%C",` + lines("99999999999999999999999", "1") + `}`, 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"quantity beyond float64", "POST", "/v1/invoices", 1, "", `{"customer_id":"%C",` + lines("1e400", "1") + `}`, 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"amount overflows int64 when multiplied", "POST", "/v1/invoices", 1, "", `{"customer_id":"%C",` + lines("9007199254740991", "9007199254740991") + `}`, 422, "", ""},
		{"fractional quantity", "POST", "/v1/invoices", 1, "", `{"customer_id":"%C",` + lines("1.5", "1") + `}`, 422, "VALIDATION_FAILED", "lines.0.quantity"},
		{"huge limit", "GET", "/v1/invoices", 0, "limit=99999999999999999999", "", 422, "VALIDATION_FAILED", "limit"},
		{"deeply nested body", "POST", "/v1/customers", 1, "", deep, 400, "", ""},
		{"deeply nested field", "POST", "/v1/customers", 1, "", `{"name":` + deep + `,"currency":"EUR"}`, 400, "", ""},
		{"NUL in customer name", "POST", "/v1/customers", 1, "", `{"name":"A\u0000cme","currency":"EUR"}`, 422, "VALIDATION_FAILED", "name"},
		{"NUL in customer email", "PATCH", "/v1/customers/%C", 1, "", `{"email":"a\u0000@b.example"}`, 422, "VALIDATION_FAILED", "email"},
		{"NUL in memo", "PATCH", "/v1/invoices/%I", 1, "", `{"memo":"\u0000"}`, 422, "VALIDATION_FAILED", "memo"},
		{"NUL in line description", "POST", "/v1/invoices", 1, "", `{"customer_id":"%C","lines":[{"description":"W\u0000","quantity":1,"unit_amount":1}]}`, 422, "VALIDATION_FAILED", "lines.0.description"},
		{"NUL in a number filter", "GET", "/v1/invoices", 0, "number=%00", "", 422, "VALIDATION_FAILED", "number"},
		{"NUL in a cursor", "GET", "/v1/customers", 0, "cursor=%00", "", 422, "", ""},
		{"NUL in a status filter", "GET", "/v1/approvals", 0, "status=%00", "", 422, "VALIDATION_FAILED", "status"},
		{"NUL in a decision reason", "POST", "/v1/approvals/%P/deny", 2, "", `{"reason":"no\u0000"}`, 422, "VALIDATION_FAILED", "reason"},
		{"NUL in a void reason", "POST", "/v1/invoices/%I/void", 0, "", `{"reason":"\u0000"}`, 422, "VALIDATION_FAILED", "reason"},
		{"NUL in a chat message", "POST", "/v1/chat", 1, "", `{"id":"nul-chat","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi\u0000"}]}]}`, 422, "VALIDATION_FAILED", ""},
		{"NUL in a chat id", "POST", "/v1/chat", 1, "", `{"id":"c\u0000","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`, 422, "VALIDATION_FAILED", "id"},
		{"NUL in a conversation path", "GET", "/v1/conversations/a%00b", 1, "", "", 404, "NOT_FOUND", ""},
		{"NUL in an id path", "GET", "/v1/invoices/%00", 1, "", "", 404, "NOT_FOUND", ""},
		{"NUL in a capability input", "POST", "/v1/capabilities/list-invoices/invoke", 1, "", `{"input":{"number":"\u0000"}}`, 422, "VALIDATION_FAILED", "number"},
		{"invalid UTF-8 in body", "POST", "/v1/customers", 1, "", "{\"name\":\"\xff\xfe\",\"currency\":\"EUR\"}", 422, "VALIDATION_FAILED", "name"},
		{"invalid UTF-8 in reason", "POST", "/v1/approvals/%P/approve", 2, "", "{\"reason\":\"\xff\"}", 422, "VALIDATION_FAILED", "reason"},
		{"invalid UTF-8 in query", "GET", "/v1/invoices", 0, "number=%ff%fe", "", 422, "VALIDATION_FAILED", "number"},
		{"invalid UTF-8 in path", "GET", "/v1/customers/%ff", 0, "", "", 404, "NOT_FOUND", ""},
		{"invalid UTF-8 in capability name", "POST", "/v1/capabilities/%ff/invoke", 0, "", `{"input":{}}`, 404, "", ""},
		{"duplicate keys", "POST", "/v1/customers", 1, "", `{"name":"Acme","name":"Evil","currency":"EUR"}`, 422, "VALIDATION_FAILED", "name"},
		{"duplicate keys in capability input", "POST", "/v1/capabilities/create-customer/invoke", 1, "", `{"input":{"name":"Acme","name":"Evil","currency":"EUR"}}`, 422, "VALIDATION_FAILED", "input.name"}, // the path in the request body
		{"null customer fields", "POST", "/v1/customers", 1, "", `{"name":null,"email":null,"currency":null}`, 422, "VALIDATION_FAILED", ""},
		{"null draft fields", "POST", "/v1/invoices", 1, "", `{"customer_id":null,"currency":null,"due_date":null,"memo":null,"lines":null}`, 422, "VALIDATION_FAILED", ""},
		{"null patch fields", "PATCH", "/v1/invoices/%I", 1, "", `{"customer_id":null,"currency":null,"memo":null,"lines":null}`, 422, "VALIDATION_FAILED", ""},
		{"null line fields", "POST", "/v1/invoices", 1, "", `{"customer_id":"%C","lines":[{"description":null,"quantity":null,"unit_amount":null,"tax_rate_bps":null}]}`, 422, "VALIDATION_FAILED", ""},
		{"null body", "POST", "/v1/customers", 1, "", `null`, 422, "VALIDATION_FAILED", ""},
		{"null reason", "POST", "/v1/approvals/%P/deny", 2, "", `{"reason":null}`, 422, "VALIDATION_FAILED", "reason"},
		{"null chat", "POST", "/v1/chat", 1, "", `{"id":null,"messages":null}`, 422, "VALIDATION_FAILED", ""},
		{"array body", "POST", "/v1/customers", 1, "", `[{"name":"Acme","currency":"EUR"}]`, 422, "VALIDATION_FAILED", ""},
		{"array for lines item", "POST", "/v1/invoices", 1, "", `{"customer_id":"%C","lines":[[]]}`, 422, "VALIDATION_FAILED", "lines.0"},
		{"array for capability input", "POST", "/v1/capabilities/create-customer/invoke", 1, "", `{"input":[]}`, 422, "VALIDATION_FAILED", ""},
		{"array reason body", "POST", "/v1/approvals/%P/deny", 2, "", `[]`, 422, "VALIDATION_FAILED", ""},
		{"array chat message", "POST", "/v1/chat", 1, "", `{"id":"arr","messages":[[]]}`, 422, "VALIDATION_FAILED", ""},
		{"string for object", "PATCH", "/v1/customers/%C", 1, "", `"name"`, 422, "VALIDATION_FAILED", ""},
		{"trailing garbage", "POST", "/v1/customers", 1, "", `{"name":"Acme","currency":"EUR"} x`, 400, "MALFORMED_JSON", ""},
		{"huge If-Match", "PATCH", "/v1/customers/%C", 1, "", `{"name":"X"}`, 412, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := func(s string) string {
				return strings.NewReplacer("%C", env.customer, "%I", env.invoice, "%A", env.approval, "%P", pending).Replace(s)
			}
			path, body := sub(tc.path), sub(tc.body)
			target := env.h.URL + path
			if tc.query != "" {
				target += "?" + tc.query
			}
			req, err := http.NewRequest(tc.method, target, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+env.tokens[tc.role])
			req.Header.Set("Content-Type", "application/json")
			if tc.name == "huge If-Match" {
				req.Header.Set("If-Match", `"`+strings.Repeat("9", 4000)+`"`)
			}
			before := env.fingerprint(t)
			resp, err := env.client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, "%s", got)
			require.Equal(t, server.ProblemContentType, resp.Header.Get("Content-Type"), "%s", got)
			var p struct {
				Code   string `json:"code"`
				Status int    `json:"status"`
				Errors []struct {
					Field string `json:"field"`
				} `json:"errors"`
			}
			require.NoError(t, json.Unmarshal(got, &p))
			require.Equal(t, tc.status, p.Status, "%s", got)
			require.NotEmpty(t, p.Code, "%s", got)
			if tc.code != "" {
				require.Equal(t, tc.code, p.Code, "%s", got)
			}
			if tc.field != "" {
				var fields []string
				for _, e := range p.Errors {
					fields = append(fields, e.Field)
				}
				require.Contains(t, fields, tc.field, "%s", got)
			}
			require.Nil(t, env.stackLike.Find(got), "%s", got)
			require.Equal(t, before, env.fingerprint(t), "a refused request wrote: %s", got)
		})
	}
}
