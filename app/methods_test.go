package app_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

// noRedirects answers each request itself, a redirect included.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send is one exchange with h whose body, media type and headers the
// caller chooses exactly (apptest.Harness.Do marks any body as JSON); a
// redirect is the answer, not followed.
func send(t *testing.T, h *apptest.Harness, method, path, token, ctype, body string, headers ...string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if body == "" {
		req.Body = http.NoBody
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return &apptest.Response{Response: resp, Body: b}
}

// TestGetBodiesAreIgnored: a GET's content has no defined semantics (RFC
// 9110 §9.3.1), so a body on one, malformed, past the body limit or of
// another media type, changes nothing: the answer is the one without it.
func TestGetBodiesAreIgnored(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	id := g.draft(t).ID.String()
	big := `{"memo":"` + strings.Repeat("x", 1_100_000) + `"}` // past the 1 MB default
	for _, path := range []string{"/v1/invoices/" + id, "/v1/invoices", "/v1/me", "/openapi.json", "/login"} {
		plain := send(t, g.h, "GET", path, g.clerkTok, "", "")
		require.Equal(t, http.StatusOK, plain.StatusCode, "%s: %s", path, plain.Body)
		for _, tc := range []struct{ name, ctype, body string }{
			{"malformed JSON", "application/json", `{"memo":`},
			{"past the body limit", "application/json", big},
			{"not JSON", "text/plain", "hello"},
			{"null", "application/json", "null"},
		} {
			r := send(t, g.h, "GET", path, g.clerkTok, tc.ctype, tc.body)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s with a body %s: %.300s", path, tc.name, r.Body)
			if path != "/login" { // the sign-in form carries a fresh CSRF token each time
				require.Equal(t, string(plain.Body), string(r.Body), "%s with a body %s", path, tc.name)
			}
		}
	}
	// A method whose content means something still reads it.
	r := send(t, g.h, "PATCH", "/v1/invoices/"+id, g.clerkTok, "application/json", `{"memo":`)
	require.Equal(t, http.StatusBadRequest, r.StatusCode, string(r.Body))
	require.Equal(t, "MALFORMED_JSON", r.Problem(t)["code"])
}

// TestHeadIsGetWithoutItsBody: HEAD on every kind of GET answers what the
// GET answers, status and headers (ETag, Content-Length and the rest),
// with no body; an event stream, which has no end to measure, refuses
// HEAD with 405 naming what it allows.
func TestHeadIsGetWithoutItsBody(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	g := &gated{h: h, ctx: context.Background()}
	g.clerk, g.clerkTok = h.User(t, "clara", identity.RoleClerk)
	inv := g.draft(t).ID.String()
	// Varying per exchange, or a cookie's value (the sign-in form's CSRF).
	varies := map[string]bool{"Date": true, "X-Request-Id": true, "Set-Cookie": true}
	for _, tc := range []struct {
		name, path, token string
		status            int
	}{
		{"a resource", "/v1/invoices/" + inv, g.clerkTok, 200},
		{"a list", "/v1/invoices", g.clerkTok, 200},
		{"a PDF", "/v1/invoices/" + inv + "/pdf", g.clerkTok, 200},
		{"a long document", "/openapi.json", "", 200},
		{"liveness", "/healthz", "", 200},
		{"readiness", "/readyz", "", 200},
		{"a problem", "/v1/invoices/0190d3f0-0000-7000-8000-000000000009", g.clerkTok, 404},
		{"a refusal by role", "/v1/users", g.clerkTok, 403},
		{"no credential", "/v1/me", "", 401},
		{"a page's redirect", "/inbox", "", 303},
		{"a page", "/login", "", 200},
	} {
		get := send(t, g.h, http.MethodGet, tc.path, tc.token, "", "")
		head := send(t, g.h, http.MethodHead, tc.path, tc.token, "", "")
		require.Equal(t, tc.status, get.StatusCode, "%s: %s", tc.name, get.Body)
		require.Equal(t, get.StatusCode, head.StatusCode, tc.name)
		if tc.status != http.StatusSeeOther {
			require.NotEmpty(t, get.Body, tc.name)
		}
		require.Empty(t, head.Body, "%s: HEAD sends no body", tc.name)
		for k := range get.Header {
			if k == "Content-Length" && get.Header.Get(k) == "0" {
				// net/http cannot tell an empty body from a HEAD's
				// dropped one, so it leaves a HEAD's length out then.
				require.Contains(t, []string{"", "0"}, head.Header.Get(k), tc.name)
				continue
			}
			if !varies[k] {
				require.Equal(t, get.Header.Values(k), head.Header.Values(k), "%s: header %s", tc.name, k)
			}
		}
		for k := range head.Header {
			if !varies[k] {
				require.Contains(t, get.Header, k, "%s: HEAD's header %s is not GET's", tc.name, k)
			}
		}
		require.Equal(t, len(get.Header.Values("Set-Cookie")), len(head.Header.Values("Set-Cookie")), tc.name)
	}
	// Where the GET knows its length, HEAD says it.
	r := send(t, g.h, http.MethodHead, "/v1/invoices/"+inv, g.clerkTok, "", "")
	require.NotEmpty(t, r.Header.Get("ETag"))
	get := send(t, g.h, http.MethodGet, "/v1/invoices/"+inv, g.clerkTok, "", "")
	require.Equal(t, strconv.Itoa(len(get.Body)), r.Header.Get("Content-Length"))

	for _, path := range []string{"/v1/approvals/events", "/v1/chat/some-chat/stream"} {
		r := send(t, g.h, http.MethodHead, path, g.clerkTok, "", "")
		require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode, path)
		require.Equal(t, "OPTIONS, GET", r.Header.Get("Allow"), path)
	}
}

// TestOptionsNamesThePathsMethods: OPTIONS answers 204 with an Allow
// header naming the path's methods (HEAD beside a GET that is no stream),
// after the same authentication as the path's other methods under /v1; a
// method the path lacks is 405 with the same Allow.
func TestOptionsNamesThePathsMethods(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	inv := g.draft(t).ID.String()
	for _, tc := range []struct{ path, token, allow string }{
		{"/v1/invoices/" + inv, g.clerkTok, "OPTIONS, DELETE, GET, HEAD, PATCH"},
		{"/v1/invoices", g.clerkTok, "OPTIONS, GET, HEAD, POST"},
		{"/v1/invoices/" + inv + "/issue", g.clerkTok, "OPTIONS, POST"},
		{"/v1/approvals/events", g.clerkTok, "OPTIONS, GET"},
		{"/v1/users/" + g.userID(t, "bob"), g.adminTok, "OPTIONS, GET, HEAD, PATCH"},
		{"/healthz", "", "OPTIONS, GET, HEAD"},
		{"/inbox", "", "OPTIONS, GET, HEAD"},
		{"/login", "", "OPTIONS, GET, HEAD, POST"},
	} {
		r := send(t, g.h, http.MethodOptions, tc.path, tc.token, "", "")
		require.Equal(t, http.StatusNoContent, r.StatusCode, "%s: %s", tc.path, r.Body)
		require.Equal(t, tc.allow, r.Header.Get("Allow"), tc.path)
		require.Empty(t, r.Body)
		r = send(t, g.h, "PUT", tc.path, tc.token, "", "")
		require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode, "%s: %s", tc.path, r.Body)
		require.Equal(t, tc.allow, r.Header.Get("Allow"), tc.path)
	}
	r := send(t, g.h, http.MethodOptions, "/v1/invoices", "", "", "")
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, "under /v1, OPTIONS authenticates as the other methods do")
	r = send(t, g.h, http.MethodOptions, "/v1/nothing-here", g.clerkTok, "", "")
	require.Equal(t, http.StatusNotFound, r.StatusCode)
}
