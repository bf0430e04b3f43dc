package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/origins"
	"github.com/stretchr/testify/require"
)

// exchange is one raw HTTP request to /mcp as curl would send it.
type exchange struct {
	method, session, origin, body string
	// header adds or, with an empty value, removes request headers.
	header map[string]string
}

// answer is what came back.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send makes the request with token; a POST carries the JSON and Accept
// headers a client sends, and any request on a session its protocol
// version.
func send(t *testing.T, base, token string, x exchange) answer {
	t.Helper()
	req, err := http.NewRequest(x.method, base+"/mcp", strings.NewReader(x.body))
	require.NoError(t, err)
	if x.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if x.method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if x.session != "" {
		req.Header.Set("Mcp-Session-Id", x.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if x.origin != "" {
		req.Header.Set("Origin", x.origin)
	}
	for k, v := range x.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// rpcError reads a JSON-RPC error response, which must come as
// application/json (never text/plain), and returns its id and code.
func (a answer) rpcError(t *testing.T) (id json.RawMessage, code int) {
	t.Helper()
	require.Equal(t, "application/json", a.header.Get("Content-Type"), "%d %s", a.status, a.body)
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(a.body, &m), string(a.body))
	require.Equal(t, "2.0", m.JSONRPC, string(a.body))
	require.NotNil(t, m.Error, string(a.body))
	require.NotEmpty(t, m.Error.Message, string(a.body))
	return m.ID, m.Error.Code
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`

// Messages JSON-RPC 2.0 or the transport refuses are refused with a
// JSON-RPC error object as application/json, never the SDK's plain text,
// with the status the transport names: invalid JSON -32700, a message
// that is no JSON-RPC 2.0 object -32600, an unknown method -32601 (the
// answer to a request, 200; a notification's refusal, 400), a message
// other than initialize without Mcp-Session-Id 400, a session this
// process does not have 404. Nothing is written, and the session still
// works after each.
func TestRawProtocolRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	s := openSession(t, b.h.URL, b.clerk, false)
	d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	issue := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"issue-invoice","arguments":{"invoice_id":"` + d.ID.String() + `"}}}`
	before := b.written(t)
	for _, tc := range []struct {
		name   string
		x      exchange
		status int
		code   int
		id     string
	}{
		{"malformed JSON", exchange{body: `{"jsonrpc":"2.0","id":1,"method":"ping"`}, 400, -32700, "null"},
		{"not JSON at all", exchange{body: `ping`}, 400, -32700, "null"},
		{"malformed JSON before a session", exchange{session: "-", body: `{"jsonrpc":`}, 400, -32700, "null"},
		{"no jsonrpc", exchange{body: `{"id":2,"method":"ping"}`}, 400, -32600, "2"},
		{"jsonrpc 1.0", exchange{body: `{"jsonrpc":"1.0","id":"a","method":"ping"}`}, 400, -32600, `"a"`},
		{"jsonrpc a number", exchange{body: `{"jsonrpc":2.0,"id":3,"method":"ping"}`}, 400, -32600, "3"},
		{"not an object", exchange{body: `42`}, 400, -32600, "null"},
		{"an id that is an object", exchange{body: `{"jsonrpc":"2.0","id":{},"method":"ping"}`}, 400, -32600, "null"},
		{"a method that is a number", exchange{body: `{"jsonrpc":"2.0","id":4,"method":7}`}, 400, -32600, "4"},
		{"neither method nor id", exchange{body: `{"jsonrpc":"2.0","params":{}}`}, 400, -32600, "null"},
		{"a write without jsonrpc", exchange{body: strings.Replace(issue, `"jsonrpc":"2.0",`, "", 1)}, 400, -32600, "5"},
		{"unknown method", exchange{body: `{"jsonrpc":"2.0","id":6,"method":"invoices/burn"}`}, 200, -32601, "6"},
		{"unknown notification", exchange{body: `{"jsonrpc":"2.0","method":"notifications/burnt"}`}, 400, -32601, "null"},
		{"logging/setLevel, logging not advertised", exchange{body: `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`}, 200, -32601, "7"},
		{"completion/complete, completions not advertised", exchange{body: `{"jsonrpc":"2.0","id":8,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"review-overdue-invoices"},"argument":{"name":"as_of","value":"2"}}}`}, 200, -32601, "8"},
		{"no session id after initialize", exchange{session: "-", body: issue}, 400, -32000, "5"},
		{"no session id on ping", exchange{session: "-", body: `{"jsonrpc":"2.0","id":9,"method":"ping"}`}, 400, -32000, "9"},
		{"a session this process does not have", exchange{session: "NOSUCHSESSION", body: issue}, 404, -32001, "null"},
		{"a batch, refused from 2025-06-18 on", exchange{body: "[" + issue + "]"}, 400, -32600, "null"},
		{"a body that is not JSON-typed", exchange{body: issue, header: map[string]string{"Content-Type": "text/plain"}}, 415, -32600, "null"},
		{"GET without a session id", exchange{method: http.MethodGet, session: "-"}, 400, -32600, "null"},
		{"DELETE of a session this process does not have", exchange{method: http.MethodDelete, session: "NOSUCHSESSION"}, 404, -32001, "null"},
	} {
		x := tc.x
		if x.method == "" {
			x.method = http.MethodPost
		}
		switch x.session {
		case "":
			x.session = s.id
		case "-":
			x.session = ""
		}
		a := send(t, b.h.URL, b.clerk, x)
		require.Equal(t, tc.status, a.status, "%s: %s", tc.name, a.body)
		id, code := a.rpcError(t)
		require.Equal(t, tc.code, code, "%s: %s", tc.name, a.body)
		require.JSONEq(t, tc.id, string(id), tc.name)
		require.Empty(t, a.header.Get("Mcp-Session-Id"), "%s opened no session", tc.name)
	}
	require.Equal(t, before, b.written(t), "no refused message wrote anything")
	require.Equal(t, "APPROVAL_REQUIRED", s.call("issue-invoice", map[string]any{"invoice_id": d.ID.String()}).error(t).Code,
		"the session works after every refusal")
}

// Without logging advertised there is no logging/setLevel (above); the
// server says what it is, its version included.
func TestInitializeReportsTheVersionAndNoLogging(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{Version: "v1.4.0"})
	a := send(t, b.h.URL, b.clerk, exchange{method: http.MethodPost, body: initialize})
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	var m message
	for _, line := range strings.Split(string(a.body), "\n") {
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok {
			require.NoError(t, json.Unmarshal([]byte(data), &m))
		}
	}
	var res struct {
		Capabilities map[string]json.RawMessage
		ServerInfo   struct{ Name, Title, Version string }
	}
	require.NoError(t, json.Unmarshal(m.Result, &res), string(a.body))
	require.Equal(t, struct{ Name, Title, Version string }{"invoiced", "invoiced back office", "v1.4.0"}, res.ServerInfo)
	require.NotContains(t, res.Capabilities, "logging")
	require.NotContains(t, res.Capabilities, "completions")
}

// A page of an origin that is neither the service's own nor listed in
// INVOICED_MCP_ALLOWED_ORIGINS is refused with 403 and a JSON-RPC error on
// every method, preflight included, before its token is even read:
// nothing is opened or written. A listed origin's page gets through with
// the CORS headers a browser needs (its 401 included, so it can read the
// challenge); the service's own origin needs no listing; a client that
// sends no Origin (an SDK, curl) is no page.
func TestOriginsAndCORS(t *testing.T) {
	t.Parallel()
	allowed, err := origins.Parse("https://inspector.example, http://localhost:6274")
	require.NoError(t, err)
	b := setup(t, app.Config{AllowedOrigins: allowed})
	s := openSession(t, b.h.URL, b.clerk, false)
	d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	issue := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"issue-invoice","arguments":{"invoice_id":"` + d.ID.String() + `"}}}`
	before := b.written(t)

	for _, origin := range []string{"https://evil.example", "http://localhost:6275", "null", "https://inspector.example.evil.example"} {
		for _, x := range []exchange{
			{method: http.MethodPost, body: initialize},
			{method: http.MethodPost, session: s.id, body: issue},
			{method: http.MethodGet, session: s.id},
			{method: http.MethodDelete, session: s.id},
			{method: http.MethodOptions, header: map[string]string{"Access-Control-Request-Method": "POST"}},
		} {
			x.origin = origin
			for _, token := range []string{b.clerk, ""} {
				a := send(t, b.h.URL, token, x)
				require.Equal(t, http.StatusForbidden, a.status, "%s %s: %s", x.method, origin, a.body)
				_, code := a.rpcError(t)
				require.Equal(t, -32000, code)
				require.Empty(t, a.header.Get("Access-Control-Allow-Origin"))
				require.Empty(t, a.header.Get("Mcp-Session-Id"))
			}
		}
	}
	require.Equal(t, before, b.written(t))
	require.Equal(t, "APPROVAL_REQUIRED", s.call("issue-invoice", map[string]any{"invoice_id": d.ID.String()}).error(t).Code,
		"the session a refused DELETE named is still open")

	// The preflight of a listed origin: no token, 204, what may be sent.
	pre := send(t, b.h.URL, "", exchange{method: http.MethodOptions, origin: "http://localhost:6274",
		header: map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"}})
	require.Equal(t, http.StatusNoContent, pre.status, string(pre.body))
	require.Equal(t, "http://localhost:6274", pre.header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "GET, POST, DELETE", pre.header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID", pre.header.Get("Access-Control-Allow-Headers"))
	require.Equal(t, "OPTIONS, DELETE, GET, POST", pre.header.Get("Allow"))

	// Its requests: initialize reads the session id, a call works.
	a := send(t, b.h.URL, b.clerk, exchange{method: http.MethodPost, origin: "https://inspector.example", body: initialize})
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	require.Equal(t, "https://inspector.example", a.header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "Mcp-Session-Id, WWW-Authenticate", a.header.Get("Access-Control-Expose-Headers"))
	require.NotEmpty(t, a.header.Get("Mcp-Session-Id"))
	require.Contains(t, a.header.Values("Vary"), "Origin")
	a = send(t, b.h.URL, b.clerk, exchange{method: http.MethodPost, origin: "https://inspector.example", session: s.id, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`})
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	require.Equal(t, "https://inspector.example", a.header.Get("Access-Control-Allow-Origin"))

	// Its page without a token is told 401 in a way it can read.
	a = send(t, b.h.URL, "", exchange{method: http.MethodPost, origin: "https://inspector.example", body: initialize})
	require.Equal(t, http.StatusUnauthorized, a.status, string(a.body))
	require.Equal(t, "https://inspector.example", a.header.Get("Access-Control-Allow-Origin"))

	// The service's own origin and no Origin at all need no listing.
	for _, origin := range []string{b.h.URL, ""} {
		a = send(t, b.h.URL, b.clerk, exchange{method: http.MethodPost, origin: origin, session: s.id, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`})
		require.Equal(t, http.StatusOK, a.status, "%q: %s", origin, a.body)
	}
}

// Without the setting only the service's own origin is allowed.
func TestNoOriginAllowedByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	a := send(t, b.h.URL, b.clerk, exchange{method: http.MethodPost, origin: "http://localhost:6274", body: initialize})
	require.Equal(t, http.StatusForbidden, a.status, string(a.body))
	_, code := a.rpcError(t)
	require.Equal(t, -32000, code)
	a = send(t, b.h.URL, b.clerk, exchange{method: http.MethodPost, origin: b.h.URL, body: initialize})
	require.Equal(t, http.StatusOK, a.status, string(a.body))
}
