package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// TestBodiesMustBeJSON: a body sent under another media type is refused
// with 415 UNSUPPORTED_MEDIA_TYPE and nothing is written, on every route
// that reads one; application/json (charset utf-8 at most) and the +json
// types pass, and a request without a body needs no Content-Type.
func TestBodiesMustBeJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sc, err := model.NewScripted(model.Script{Default: []model.ScriptStep{{Text: "Hello."}}})
	require.NoError(t, err)
	h := apptest.New(t, apptest.Options{Config: app.Config{Model: sc}})
	_, clerk := h.User(t, "cleo", identity.RoleClerk)
	_, approver := h.User(t, "apu", identity.RoleApprover)
	count := func() (n int) {
		require.NoError(t, h.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM customers) + (SELECT count(*) FROM invoices)
			+ (SELECT count(*) FROM audit_events) + (SELECT count(*) FROM conversations) + (SELECT count(*) FROM idempotency_keys)`).Scan(&n))
		return n
	}
	send := func(method, path, token, ctype, body string, headers ...string) *apptest.Response {
		t.Helper()
		req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if body == "" {
			req.Body = http.NoBody
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, err = io.Copy(&b, resp.Body)
		require.NoError(t, err)
		return &apptest.Response{Response: resp, Body: []byte(b.String())}
	}

	r := h.Do(t, "POST", "/v1/customers", clerk, map[string]any{"name": "Acme", "currency": "EUR", "address": invoicetest.CustomerAddress})
	require.Equal(t, http.StatusCreated, r.StatusCode, string(r.Body))
	var cust struct{ ID string }
	r.JSON(t, &cust)
	r = h.Do(t, "POST", "/v1/invoices", clerk, map[string]any{"customer_id": cust.ID, "lines": []any{map[string]any{"description": "Work", "quantity": 1, "unit_amount": 100}}})
	require.Equal(t, http.StatusCreated, r.StatusCode, string(r.Body))
	var inv struct{ ID string }
	r.JSON(t, &inv)
	// A POST without a body (nor a Content-Type) is read as before.
	r = h.Do(t, "POST", "/v1/invoices/"+inv.ID+"/issue", clerk, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
	approval, _ := r.Problem(t)["approval_id"].(string)
	require.NotEmpty(t, approval)

	customer := `{"name":"Beta","currency":"EUR"}`
	chat := `{"id":"ct1","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`
	for _, tc := range []struct {
		name, method, path, token, ctype, body string
		headers                                []string
	}{
		{"text/plain", "POST", "/v1/customers", clerk, "text/plain", customer, nil},
		{"no Content-Type", "POST", "/v1/customers", clerk, "", customer, nil},
		{"a form", "POST", "/v1/customers", clerk, "application/x-www-form-urlencoded", "name=Beta&currency=EUR", nil},
		{"another charset", "POST", "/v1/customers", clerk, "application/json; charset=iso-8859-1", customer, nil},
		{"not a media type", "POST", "/v1/customers", clerk, "json", customer, nil},
		{"with an idempotency key", "POST", "/v1/customers", clerk, "text/plain", customer, []string{"Idempotency-Key", "ct-1"}},
		{"patch", "PATCH", "/v1/invoices/" + inv.ID, clerk, "text/plain", `{"memo":"x"}`, nil},
		{"invoke", "POST", "/v1/capabilities/create-customer/invoke", clerk, "text/plain", `{"input":` + customer + `}`, nil},
		{"decision", "POST", "/v1/approvals/" + approval + "/deny", approver, "text/plain", `{"reason":"no"}`, nil},
		{"chat", "POST", "/v1/chat", clerk, "text/plain", chat, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := count()
			r := send(tc.method, tc.path, tc.token, tc.ctype, tc.body, tc.headers...)
			require.Equal(t, http.StatusUnsupportedMediaType, r.StatusCode, string(r.Body))
			p := r.Problem(t)
			require.Equal(t, "UNSUPPORTED_MEDIA_TYPE", p["code"])
			require.Contains(t, p["detail"], "application/json")
			require.Equal(t, before, count())
		})
	}

	for _, ctype := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; charset=UTF-8", "application/merge-patch+json"} {
		r = send("PATCH", "/v1/invoices/"+inv.ID, clerk, ctype, `{"memo":"ok"}`)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s: %s", ctype, r.Body)
	}
	// An empty body needs no JSON Content-Type, whatever it says.
	r = send("POST", "/v1/approvals/"+approval+"/approve", approver, "text/plain", "")
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	// What is not a route stays 404 and 405 whatever the body.
	r = send("POST", "/v1/nothing-here", clerk, "text/plain", customer)
	require.Equal(t, http.StatusNotFound, r.StatusCode, string(r.Body))
	r = send("POST", "/v1/me", clerk, "text/plain", customer)
	require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode, string(r.Body))
}
