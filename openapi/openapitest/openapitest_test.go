package openapitest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	invoiceID = "0190d3f0-0000-7000-8000-000000000001"
	invoice   = `{"id":"` + invoiceID + `","number":null,"status":"draft","customer_id":"0190d3f0-0000-7000-8000-000000000002",
		"currency":"EUR","due_date":null,"memo":"","supply_date":null,"service_period":null,"payment_terms_days":null,
		"purchase_order":"","buyer_reference":"","lines":[{"description":"Consulting","quantity":"3","unit":"DAY","unit_amount":12000,
		"vat_category":"S","tax_rate_bps":1900,"exemption_reason":"","exemption_code":"","amount":36000,"tax_amount":6840}],
		"vat_breakdown":[{"vat_category":"S","tax_rate_bps":1900,"taxable_amount":36000,"tax_amount":6840,"exemption_reason":"","exemption_code":""}],
		"tax_rounding":"group","subtotal":36000,"tax_total":6840,"total":42840,
		"amount_paid":0,"amount_credited":0,"balance_due":42840,"overdue":false,"issued_at":null,"voided_at":null,"paid_at":null,"version":1,"created_at":"2026-01-02T03:04:05Z",
		"updated_at":"2026-01-02T03:04:05Z","bill_to":null,"seller":null}`
	notFound = `{"type":"about:blank","title":"Not Found","status":404,"code":"NOT_FOUND","detail":"invoice not found"}`
)

// exchange is one request and the answer a fake server gives it.
type exchange struct {
	method, path, contentType, body string
	status                          int
	header                          map[string]string
	answer                          string
	clientGone                      bool
}

func (x exchange) serve(t *testing.T) []string {
	t.Helper()
	c, err := newChecker()
	require.NoError(t, err)
	h := c.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range x.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(x.status)
		_, _ = w.Write([]byte(x.answer))
	}))
	req := httptest.NewRequest(x.method, x.path, strings.NewReader(x.body))
	if x.body == "" {
		req.Body = http.NoBody
	}
	if x.contentType != "" {
		req.Header.Set("Content-Type", x.contentType)
	}
	if x.clientGone {
		ctx, cancel := context.WithCancel(req.Context())
		cancel()
		req = req.WithContext(ctx)
	}
	h.ServeHTTP(httptest.NewRecorder(), req)
	return c.mismatches()
}

var (
	jsonWithID = map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1", "ETag": `"1"`}
	problem    = map[string]string{"Content-Type": "application/problem+json", "X-Request-Id": "r1"}
)

// Each difference between an exchange and the document is reported once,
// saying what to change; an exchange the document describes is not.
func TestMismatchesAreFoundAndNamed(t *testing.T) {
	t.Parallel()
	get := "/v1/invoices/" + invoiceID
	for name, tc := range map[string]struct {
		x    exchange
		want []string // substrings of the one mismatch; none: no mismatch
	}{
		"as documented": {x: exchange{method: "GET", path: get, status: 200, header: jsonWithID, answer: invoice}},
		"a member the schema lacks": {
			x:    exchange{method: "GET", path: get, status: 200, header: jsonWithID, answer: strings.Replace(invoice, `"memo":""`, `"memo":"","note":"x"`, 1)},
			want: []string{`GET /v1/invoices/{id} answered 200, which does not match responses."200" of get-invoice`, "note", "[GET " + get + "]"},
		},
		"a problem code the status does not list": {
			x:    exchange{method: "GET", path: get, status: 404, header: problem, answer: strings.Replace(notFound, "NOT_FOUND", "CONFLICT", 1)},
			want: []string{`answered 404 CONFLICT, which does not match responses."404" of get-invoice`, "NOT_FOUND"},
		},
		"an undeclared status": {
			x:    exchange{method: "GET", path: get, status: 409, header: problem, answer: strings.Replace(notFound, "NOT_FOUND", "CONFLICT", 1)},
			want: []string{`GET /v1/invoices/{id} answered 409 CONFLICT, not declared for get-invoice (declared: 200, 304, 401, 404, 503)`, `add responses."409" (problem code CONFLICT)`},
		},
		"an undeclared header": {
			x:    exchange{method: "GET", path: get, status: 200, header: map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1", "ETag": `"1"`, "Location": "/x"}, answer: invoice},
			want: []string{`with header Location, not declared on responses."200" of get-invoice`, "add headers.Location"},
		},
		"a declared header with a wrong value": {
			x:    exchange{method: "GET", path: get, status: 200, header: map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1", "ETag": "W/1"}, answer: invoice},
			want: []string{`does not match responses."200" of get-invoice`, "ETag"},
		},
		"a request the document refuses, accepted": {
			x: exchange{method: "POST", path: "/v1/customers", contentType: "text/plain", body: `{"name":"Acme","currency":"EUR"}`,
				status: 201, header: map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1", "ETag": `"1"`, "Location": "/v1/customers/x"},
				answer: `{"id":"0190d3f0-0000-7000-8000-000000000002","name":"Acme","email":"","currency":"EUR",` +
					`"address":{"lines":[],"postcode":"","city":"","subdivision":"","country":""},"vat_id":"","tax_number":"","buyer_reference":"",` +
					`"language":"en","payment_terms_days":null,"einvoice_format":"none","peppol_id":"","version":1,"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`},
			want: []string{"POST /v1/customers answered 201 to a request create-customer refuses", "text/plain"},
		},
		"a request the document refuses, refused": {
			x: exchange{method: "POST", path: "/v1/customers", contentType: "application/json", body: `{"name":""}`, status: 422, header: problem,
				answer: `{"type":"about:blank","title":"Unprocessable Entity","status":422,"code":"VALIDATION_FAILED","errors":[{"field":"name","message":"too short"}]}`},
		},
		"a route the document lacks": {
			x:    exchange{method: "POST", path: "/v1/users", contentType: "application/json", body: `{}`, status: 201, header: map[string]string{"Content-Type": "application/json"}, answer: `{}`},
			want: []string{"POST /v1/users answered 201, but openapi/openapi.yaml has no such operation", `add paths."/v1/users".post`, "(201 here)"},
		},
		"an id-bearing route the document lacks": {
			x:    exchange{method: "DELETE", path: "/v1/users/" + invoiceID + "/tokens/7", status: 204},
			want: []string{`add paths."/v1/users/{id}/tokens/{id}".delete`},
		},
		"a route the document lacks, answered 404": {
			x: exchange{method: "GET", path: "/v1/nothing-here", status: 404, header: problem, answer: notFound},
		},
		"a method the document lacks, answered 405": {
			x: exchange{method: "PUT", path: get, status: 405, header: problem,
				answer: `{"type":"about:blank","title":"Method Not Allowed","status":405,"code":"METHOD_NOT_ALLOWED"}`},
		},
		"a client gone before the answer": {
			x: exchange{method: "GET", path: "/v1/approvals/" + invoiceID + "?wait=30s", status: 499, clientGone: true},
		},
		"an event stream": {
			x: exchange{method: "GET", path: "/v1/approvals/events", status: 200,
				header: map[string]string{"Content-Type": "text/event-stream", "X-Request-Id": "r1"}, answer: ": approvals\n\n"},
		},
		"a page redirect": {
			x: exchange{method: "GET", path: "/inbox", status: 303, header: map[string]string{"Location": "/login?next=%2Finbox", "X-Request-Id": "r1"}},
		},
		"a HEAD, as its GET": {x: exchange{method: "HEAD", path: get, status: 200, header: jsonWithID, answer: invoice}},
		"a HEAD answered with a status its GET lacks": {
			x:    exchange{method: "HEAD", path: get, status: 409, header: problem, answer: strings.Replace(notFound, "NOT_FOUND", "CONFLICT", 1)},
			want: []string{`HEAD /v1/invoices/{id} answered 409 CONFLICT, not declared for get-invoice`},
		},
		"a HEAD with a header its GET lacks": {
			x:    exchange{method: "HEAD", path: get, status: 200, header: map[string]string{"Content-Type": "application/json", "X-Request-Id": "r1", "ETag": `"1"`, "Location": "/x"}},
			want: []string{`HEAD /v1/invoices/{id} answered 200 with header Location, not declared on responses."200" of get-invoice`},
		},
		"a HEAD of an event stream, refused": {
			x: exchange{method: "HEAD", path: "/v1/approvals/events", status: 405, header: problem,
				answer: `{"type":"about:blank","title":"Method Not Allowed","status":405,"code":"METHOD_NOT_ALLOWED"}`},
		},
		"a HEAD of an event stream, answered": {
			x:    exchange{method: "HEAD", path: "/v1/approvals/events", status: 200, header: map[string]string{"Content-Type": "text/event-stream", "X-Request-Id": "r1"}},
			want: []string{"HEAD /v1/approvals/events answered 200, but openapi/openapi.yaml has no such operation"},
		},
		"OPTIONS, as the document's methods": {
			x: exchange{method: "OPTIONS", path: get, status: 204, header: map[string]string{"Allow": "OPTIONS, DELETE, GET, HEAD, PATCH", "X-Request-Id": "r1"}},
		},
		"OPTIONS of an event stream: no HEAD": {
			x: exchange{method: "OPTIONS", path: "/v1/approvals/events", status: 204, header: map[string]string{"Allow": "OPTIONS, GET"}},
		},
		"OPTIONS with an Allow the document does not make": {
			x:    exchange{method: "OPTIONS", path: get, status: 204, header: map[string]string{"Allow": "OPTIONS, DELETE, GET, PATCH"}},
			want: []string{"OPTIONS /v1/invoices/{id} answered Allow: DELETE, GET, OPTIONS, PATCH", "make it DELETE, GET, HEAD, OPTIONS, PATCH"},
		},
		"OPTIONS with a body": {
			x:    exchange{method: "OPTIONS", path: get, status: 204, header: map[string]string{"Allow": "OPTIONS, DELETE, GET, HEAD, PATCH"}, answer: "x"},
			want: []string{"answered 204 with a body"},
		},
		"OPTIONS before authentication": {
			x: exchange{method: "OPTIONS", path: get, status: 401, header: problem,
				answer: `{"type":"about:blank","title":"Unauthorized","status":401,"code":"UNAUTHENTICATED"}`},
		},
		"OPTIONS answered 200": {
			x:    exchange{method: "OPTIONS", path: get, status: 200, header: map[string]string{"Allow": "OPTIONS, DELETE, GET, HEAD, PATCH"}},
			want: []string{"OPTIONS /v1/invoices/{id} answered 200, which not every operation of the path declares"},
		},
		"OPTIONS on a path the document lacks": {x: exchange{method: "OPTIONS", path: "/v1/nothing-here", status: 404, header: problem, answer: notFound}},
		"a redirect without its Location": {
			x:    exchange{method: "GET", path: "/inbox", status: 303, header: map[string]string{"X-Request-Id": "r1"}},
			want: []string{`GET /inbox answered 303, which does not match responses."303" of page-inbox`, "Location"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := tc.x.serve(t)
			if tc.want == nil {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%q", got)
			for _, w := range tc.want {
				require.Contains(t, got[0], w)
			}
		})
	}
}

// The same mismatch from many exchanges, whatever their ids, is one
// report naming the first and counting the others.
func TestMismatchesAreReportedOnce(t *testing.T) {
	t.Parallel()
	c, err := newChecker()
	require.NoError(t, err)
	h := c.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, id := range []string{invoiceID, "0190d3f0-0000-7000-8000-000000000002", "0190d3f0-0000-7000-8000-000000000003"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/invoices/"+id, nil))
	}
	got := c.mismatches()
	require.Len(t, got, 1)
	require.Contains(t, got[0], `GET /v1/invoices/{id} answered 418, not declared for get-invoice`)
	require.True(t, strings.HasSuffix(got[0], "[GET /v1/invoices/"+invoiceID+" and 2 more]"), got[0])
}

// The server reads the body the checker read, byte for byte.
func TestTheServerReadsTheBodyAsSent(t *testing.T) {
	t.Parallel()
	c, err := newChecker()
	require.NoError(t, err)
	var got string
	h := c.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"type":"about:blank","title":"x","status":422,"code":"VALIDATION_FAILED"}`))
	}))
	req := httptest.NewRequest("POST", "/v1/customers", strings.NewReader(`{"name":"Acme"}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)
	require.Equal(t, `{"name":"Acme"}`, got)
	require.Empty(t, c.mismatches())
}
