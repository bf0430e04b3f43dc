package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/stretchr/testify/require"
)

// send is one exchange with h whose body, media type and headers the
// caller chooses exactly (apptest.Harness.Do marks any body as JSON).
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
	resp, err := http.DefaultClient.Do(req)
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
