package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

// browserResolve mimics the WHATWG URL parser's first step, which every
// browser applies to a Location header: strip ASCII tab and newline.
// rawDo sends one request without the client's redirect handling (Go's
// client refuses to parse a Location holding a tab; browsers strip it).
func rawDo(t *testing.T, br *browser, method, path string, form url.Values) (int, string) {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, br.base+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range br.c.Jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func browserResolve(loc string) string {
	return strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(loc)
}

// Browsers drop a tab from a Location, so "/<TAB>/host" must not pass as a
// path: after sign-in they would follow "//evil.example" off the site.
func TestSignInWithATabInNextStaysOnSite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	form := br.do(http.MethodGet, "/login", nil)
	require.Equal(t, http.StatusOK, form.status)
	status, loc := rawDo(t, br, http.MethodPost, "/login", url.Values{
		"csrf_token": {csrfOf(t, form)}, "username": {"ann"}, "password": {testPassword}, "next": {"/\t/evil.example/phish"},
	})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/inbox", loc, "after sign-in the browser goes to %q, i.e. %q", loc, browserResolve(loc))
}

func TestLoginFormWithATabInNextStaysOnSite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ann", testPassword).status)
	status, loc := rawDo(t, br, http.MethodGet, "/login?next=/%09/evil.example/phish", nil)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/inbox", loc, "a signed-in browser is sent to %q, i.e. %q", loc, browserResolve(loc))
}
