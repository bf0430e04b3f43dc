package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/oauth"
	"github.com/invoiced/invoiced/origins"
	"github.com/invoiced/invoiced/store/storetest"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

const (
	password = "correct horse battery"
	redirect = "http://127.0.0.1:7777/callback"
)

// bundle is a running service with a clerk and an approver who have
// passwords, and a registered client.
type bundle struct {
	h        *apptest.Harness
	clerk    *identity.User
	approver *identity.User
	client   string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	h := apptest.New(t, apptest.Options{Config: app.Config{}})
	b := &bundle{h: h}
	b.clerk, _ = h.User(t, "clerk", identity.RoleClerk)
	b.approver, _ = h.User(t, "approver", identity.RoleApprover)
	for _, u := range []string{"clerk", "approver"} {
		require.NoError(t, identity.PasswordSet(context.Background(), h.Pool, u, password))
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	resp := b.post(t, "/oauth/register", "application/json",
		`{"client_name": "Test Agent", "redirect_uris": ["`+redirect+`"], "token_endpoint_auth_method": "none"}`)
	require.Equal(t, http.StatusCreated, resp.status, resp.body)
	require.NoError(t, json.Unmarshal([]byte(resp.body), &reg))
	b.client = reg.ClientID
	return b
}

type answer struct {
	status   int
	body     string
	location string
	header   http.Header
}

func do(t *testing.T, c *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, body: string(body), location: resp.Header.Get("Location"), header: resp.Header}
}

func (b *bundle) post(t *testing.T, path, ctype, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.h.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ctype)
	return do(t, http.DefaultClient, req)
}

// browser is a user's browser: cookies kept, redirects seen one by one.
type browser struct {
	t *testing.T
	c *http.Client
	b *bundle
}

func (b *bundle) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, b: b, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (br *browser) get(u string) answer {
	if strings.HasPrefix(u, "/") {
		u = br.b.h.URL + u
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(br.t, err)
	return do(br.t, br.c, req)
}

func (br *browser) form(path string, v url.Values) answer {
	req, err := http.NewRequest(http.MethodPost, br.b.h.URL+path, strings.NewReader(v.Encode()))
	require.NoError(br.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(br.t, br.c, req)
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrf(t *testing.T, page string) string {
	m := csrfRE.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	return m[1]
}

// signIn signs the browser in as username through the sign-in form,
// returning where it was sent.
func (br *browser) signIn(username, next string) string {
	page := br.get("/login?next=" + url.QueryEscape(next))
	a := br.form("/login", url.Values{"csrf_token": {csrf(br.t, page.body)}, "username": {username}, "password": {password}, "next": {next}})
	require.Equal(br.t, http.StatusSeeOther, a.status, a.body)
	return a.location
}

// flow is one authorization request's parameters.
type flow struct {
	verifier string
	q        url.Values
}

func (b *bundle) flow() *flow {
	v := oauth2.GenerateVerifier()
	return &flow{verifier: v, q: url.Values{
		"response_type": {"code"}, "client_id": {b.client}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(v)}, "code_challenge_method": {"S256"},
		"resource": {b.h.URL + "/mcp"}, "scope": {"read write"},
	}}
}

// consent runs an authorization request through sign-in and the consent
// page as username, deciding with form, and returns where the browser is
// sent back to.
func (b *bundle) consent(t *testing.T, f *flow, username string, decide url.Values) answer {
	br := b.browser(t)
	a := br.get("/oauth/authorize?" + f.q.Encode())
	require.Equal(t, http.StatusFound, a.status, a.body)
	consentPath := a.location
	require.True(t, strings.HasPrefix(consentPath, "/oauth/consent/"), consentPath)
	a = br.get(consentPath)
	require.Equal(t, http.StatusSeeOther, a.status)
	require.Contains(t, a.location, "/login?next=")
	require.Equal(t, consentPath, br.signIn(username, consentPath))
	page := br.get(consentPath)
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.Contains(t, page.body, "Agent")
	require.Contains(t, page.body, "127.0.0.1:7777")
	require.Contains(t, page.header.Get("Content-Security-Policy"), "form-action 'self' http://127.0.0.1:7777")
	decide.Set("csrf_token", csrf(t, page.body))
	return br.form(consentPath, decide)
}

// signInRefused tries to sign in as the disabled clerk: the form refuses.
func (b *bundle) signInRefused(t *testing.T, next string) {
	br := b.browser(t)
	page := br.get("/login?next=" + url.QueryEscape(next))
	a := br.form("/login", url.Values{"csrf_token": {csrf(t, page.body)}, "username": {"clerk"}, "password": {password}, "next": {next}})
	require.Equal(t, http.StatusUnauthorized, a.status)
}

// code is the code an approved consent sent the browser back with.
func (b *bundle) code(t *testing.T, f *flow) string {
	a := b.consent(t, f, "clerk", url.Values{"decision": {"approve"}, "scope": {"read write"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	back, err := url.Parse(a.location)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7777", back.Host)
	require.Equal(t, "st-1", back.Query().Get("state"))
	require.Equal(t, b.h.URL, back.Query().Get("iss"))
	require.NotEmpty(t, back.Query().Get("code"))
	return back.Query().Get("code")
}

type tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	TokenType    string `json:"token_type"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

func (b *bundle) token(t *testing.T, v url.Values) (int, tokens) {
	a := b.post(t, "/oauth/token", "application/x-www-form-urlencoded", v.Encode())
	var out tokens
	require.NoError(t, json.Unmarshal([]byte(a.body), &out), a.body)
	return a.status, out
}

func (b *bundle) exchange(f *flow, code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {f.verifier},
		"redirect_uri": {redirect}, "client_id": {b.client}, "resource": {b.h.URL + "/mcp"}}
}

func (b *bundle) refresh(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {b.client}}
}

// granted counts grants and their tokens: what a refusal must not add.
func (b *bundle) granted(t *testing.T) [2]int {
	var out [2]int
	require.NoError(t, b.h.Pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM api_tokens WHERE oauth_client_id IS NOT NULL), (SELECT count(*) FROM oauth_tokens)`).Scan(&out[0], &out[1]))
	return out
}

func mcpRequest(t *testing.T, base, token string) answer {
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, http.DefaultClient, req)
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func toolNames(t *testing.T, base, token string) []string {
	c := gomcp.NewClient(&gomcp.Implementation{Name: "oauth-test", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &gomcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1}, &gomcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	read, err := cs.CallTool(context.Background(), &gomcp.CallToolParams{Name: "list-invoices", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, read.IsError, "%+v", read.Content)
	return names
}

// A client that knows only the server's URL: a 401 names the resource's
// metadata, which names this server as the authorization server.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := mcpRequest(t, b.h.URL, "")
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Equal(t, `Bearer resource_metadata="`+b.h.URL+`/.well-known/oauth-protected-resource/mcp", scope="read write"`, a.header.Get("WWW-Authenticate"))
	a = mcpRequest(t, b.h.URL, "ioa_expired-or-made-up")
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)

	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			Scopes               []string `json:"scopes_supported"`
		}
		br := b.browser(t).get(path)
		require.NoError(t, json.Unmarshal([]byte(br.body), &prm))
		require.Equal(t, b.h.URL+"/mcp", prm.Resource)
		require.Equal(t, []string{b.h.URL}, prm.AuthorizationServers)
		require.Equal(t, []string{"read", "write"}, prm.Scopes)
	}
	var asm map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.browser(t).get("/.well-known/oauth-authorization-server").body), &asm))
	require.Equal(t, b.h.URL, asm["issuer"])
	require.Equal(t, []any{"S256"}, asm["code_challenge_methods_supported"])
	require.Equal(t, true, asm["client_id_metadata_document_supported"])
	require.Equal(t, b.h.URL+"/oauth/register", asm["registration_endpoint"])
}

// The whole grant: consent, code, tokens, MCP over the access token,
// refresh (rotated), the grant among the user's tokens, revoked there.
func TestGrant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.flow()
	status, tok := b.token(t, b.exchange(f, b.code(t, f)))
	require.Equal(t, http.StatusOK, status, tok)
	require.Equal(t, "Bearer", tok.TokenType)
	require.Equal(t, 3600, tok.ExpiresIn)
	require.Equal(t, "read write", tok.Scope)
	require.True(t, strings.HasPrefix(tok.AccessToken, "ioa_"))
	require.Contains(t, toolNames(t, b.h.URL, tok.AccessToken), "create-customer")

	status, next := b.token(t, b.refresh(tok.RefreshToken))
	require.Equal(t, http.StatusOK, status, next)
	require.NotEqual(t, tok.RefreshToken, next.RefreshToken)
	require.Contains(t, toolNames(t, b.h.URL, next.AccessToken), "create-customer")

	// A /mcp token is not a /v1 credential.
	_, admin := b.h.User(t, "admin", identity.RoleAdmin)
	r := b.h.Do(t, http.MethodGet, "/v1/me", next.AccessToken, nil)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode)

	var list struct {
		Data []identity.Token `json:"data"`
	}
	b.h.Do(t, http.MethodGet, "/v1/users/"+b.clerk.ID.String()+"/tokens", admin, nil).JSON(t, &list)
	var grant *identity.Token
	for i := range list.Data {
		if list.Data[i].OAuthClient != nil {
			grant = &list.Data[i]
		}
	}
	require.NotNil(t, grant)
	require.Equal(t, "Test Agent", grant.Name)
	require.Equal(t, b.client, *grant.OAuthClient)
	require.Equal(t, "read write", *grant.Scope)
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodPost, "/v1/tokens/"+grant.ID.String()+"/revoke", admin, nil).StatusCode)
	a := mcpRequest(t, b.h.URL, next.AccessToken)
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)
	status, refused := b.token(t, b.refresh(next.RefreshToken))
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", refused.Error)
}

// A read grant offers read tools alone; revoking at /oauth/revoke ends it.
func TestReadGrant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.flow()
	a := b.consent(t, f, "clerk", url.Values{"decision": {"approve"}, "scope": {"read"}})
	back, err := url.Parse(a.location)
	require.NoError(t, err)
	status, tok := b.token(t, b.exchange(f, back.Query().Get("code")))
	require.Equal(t, http.StatusOK, status, tok)
	require.Equal(t, "read", tok.Scope)
	names := toolNames(t, b.h.URL, tok.AccessToken)
	require.Contains(t, names, "list-invoices")
	require.NotContains(t, names, "create-customer")
	require.NotContains(t, names, "issue-invoice")

	r := b.post(t, "/oauth/revoke", "application/x-www-form-urlencoded", url.Values{"token": {tok.RefreshToken}, "client_id": {b.client}}.Encode())
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, http.StatusUnauthorized, mcpRequest(t, b.h.URL, tok.AccessToken).status)
}

// Each refusal with OAuth's error, and nothing granted.
func TestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// At the authorization endpoint, redirected back with the error.
	for name, tc := range map[string]struct {
		edit func(url.Values)
		want string
	}{
		"no PKCE":          {func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "invalid_request"},
		"plain PKCE":       {func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		"another resource": {func(q url.Values) { q.Set("resource", b.h.URL+"/v1") }, "invalid_target"},
		"an unknown scope": {func(q url.Values) { q.Set("scope", "admin") }, "invalid_scope"},
		"token response":   {func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
	} {
		f := b.flow()
		tc.edit(f.q)
		a := b.browser(t).get("/oauth/authorize?" + f.q.Encode())
		require.Equal(t, http.StatusFound, a.status, name)
		back, err := url.Parse(a.location)
		require.NoError(t, err, name)
		require.Equal(t, "127.0.0.1:7777", back.Host, name)
		require.Equal(t, tc.want, back.Query().Get("error"), name)
		require.Equal(t, "st-1", back.Query().Get("state"), name)
	}
	// A redirect URI the client did not register is never redirected to.
	for name, uri := range map[string]string{
		"path":   "http://127.0.0.1:7777/other",
		"query":  "http://127.0.0.1:7777/callback?x=1",
		"host":   "http://evil.example/callback",
		"scheme": "https://127.0.0.1:7777/callback",
	} {
		f := b.flow()
		f.q.Set("redirect_uri", uri)
		a := b.browser(t).get("/oauth/authorize?" + f.q.Encode())
		require.Equal(t, http.StatusUnprocessableEntity, a.status, name)
		require.Contains(t, a.body, `"field":"redirect_uri"`, name)
	}
	// Any port on loopback (RFC 8252 §7.3).
	f := b.flow()
	f.q.Set("redirect_uri", "http://127.0.0.1:45678/callback")
	a := b.browser(t).get("/oauth/authorize?" + f.q.Encode())
	require.Equal(t, http.StatusFound, a.status)
	require.True(t, strings.HasPrefix(a.location, "/oauth/consent/"), a.location)
	require.Equal(t, [2]int{}, b.granted(t))

	// At the token endpoint.
	exchangeWith := func(edit func(url.Values)) (int, tokens) {
		f := b.flow()
		v := b.exchange(f, b.code(t, f))
		edit(v)
		return b.token(t, v)
	}
	for name, tc := range map[string]struct {
		edit func(url.Values)
		want string
	}{
		"wrong verifier":       {func(v url.Values) { v.Set("code_verifier", oauth2.GenerateVerifier()) }, "invalid_grant"},
		"no verifier":          {func(v url.Values) { v.Del("code_verifier") }, "invalid_request"},
		"redirect by path":     {func(v url.Values) { v.Set("redirect_uri", "http://127.0.0.1:7777/other") }, "invalid_grant"},
		"redirect by query":    {func(v url.Values) { v.Set("redirect_uri", redirect+"?x=1") }, "invalid_grant"},
		"another client":       {func(v url.Values) { v.Set("client_id", "ioc_someone-else") }, "invalid_grant"},
		"token for another":    {func(v url.Values) { v.Set("resource", b.h.URL+"/v1") }, "invalid_target"},
		"a made-up code":       {func(v url.Values) { v.Set("code", "made-up") }, "invalid_grant"},
		"an unsupported grant": {func(v url.Values) { v.Set("grant_type", "password") }, "unsupported_grant_type"},
	} {
		status, out := exchangeWith(tc.edit)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Equal(t, tc.want, out.Error, name)
		require.NotEmpty(t, out.Description, name)
	}
	require.Equal(t, [2]int{}, b.granted(t))

	// A disabled user cannot consent (the session ends with the account);
	// an approver cannot grant write.
	f = b.flow()
	br := b.browser(t)
	consentPath := br.get("/oauth/authorize?" + f.q.Encode()).location
	br.signIn("clerk", consentPath)
	page := br.get(consentPath)
	require.NoError(t, identity.UserSetDisabled(context.Background(), b.h.Pool, b.clerk.ID, true))
	a = br.form(consentPath, url.Values{"csrf_token": {csrf(t, page.body)}, "decision": {"approve"}, "scope": {"read write"}})
	require.Equal(t, http.StatusSeeOther, a.status)
	require.True(t, strings.HasPrefix(a.location, "/login?"), "back to sign in, not to the client: %s", a.location)
	b.signInRefused(t, consentPath)
	require.NoError(t, identity.UserSetDisabled(context.Background(), b.h.Pool, b.clerk.ID, false))

	a = b.consent(t, b.flow(), "approver", url.Values{"decision": {"approve"}, "scope": {"read write"}})
	require.Equal(t, http.StatusUnprocessableEntity, a.status, a.body)
	require.Equal(t, [2]int{}, b.granted(t))

	// Denied: access_denied, nothing granted.
	a = b.consent(t, b.flow(), "clerk", url.Values{"decision": {"deny"}})
	require.Equal(t, http.StatusSeeOther, a.status)
	require.Contains(t, a.location, "error=access_denied")
	require.Equal(t, [2]int{}, b.granted(t))
}

// A code is exchanged once: of many at once one wins, and the others'
// reuse revokes what it won. A refresh token is used once: a second use
// revokes its grant.
func TestSingleUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.flow()
	v := b.exchange(f, b.code(t, f))
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = b.token(t, v)
		}()
	}
	wg.Wait()
	won := 0
	for _, s := range statuses {
		if s == http.StatusOK {
			won++
		}
	}
	require.Equal(t, 1, won, statuses)
	require.Equal(t, 1, b.granted(t)[0])
	var revoked bool
	require.NoError(t, b.h.Pool.QueryRow(context.Background(),
		`SELECT revoked_at IS NOT NULL FROM api_tokens WHERE oauth_client_id IS NOT NULL`).Scan(&revoked))
	require.True(t, revoked, "the code's reuse revoked what its first exchange won")

	f = b.flow()
	status, tok := b.token(t, b.exchange(f, b.code(t, f)))
	require.Equal(t, http.StatusOK, status)
	status, _ = b.token(t, b.exchange(f, "x"))
	require.Equal(t, http.StatusBadRequest, status)
	status, next := b.token(t, b.refresh(tok.RefreshToken))
	require.Equal(t, http.StatusOK, status)
	status, again := b.token(t, b.refresh(tok.RefreshToken))
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", again.Error)
	require.Contains(t, again.Description, "revoked")
	require.Equal(t, http.StatusUnauthorized, mcpRequest(t, b.h.URL, next.AccessToken).status)
	status, _ = b.token(t, b.refresh(next.RefreshToken))
	require.Equal(t, http.StatusBadRequest, status)
}

// A client known by its metadata document (the 2025-11-25 specification's
// preferred way): its https URL is its client_id; the server fetches the
// document, and a document naming another client_id is no client.
func TestClientMetadataDocument(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	docs := httptest.NewTLSServer(mux)
	t.Cleanup(docs.Close)
	id := docs.URL + "/client.json"
	mux.HandleFunc("/client.json", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"client_id": "`+id+`", "client_name": "Doc Agent", "redirect_uris": ["`+redirect+`"], "token_endpoint_auth_method": "none"}`)
	})
	mux.HandleFunc("/liar.json", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"client_id": "https://elsewhere.example/c.json", "client_name": "Liar", "redirect_uris": ["`+redirect+`"]}`)
	})
	h := apptest.New(t, apptest.Options{Config: app.Config{OAuth: oauth.Config{ClientDocuments: docs.Client()}}})
	clerk, _ := h.User(t, "clerk", identity.RoleClerk)
	require.NoError(t, identity.PasswordSet(context.Background(), h.Pool, clerk.Username, password))
	b := &bundle{h: h, clerk: clerk, client: id}

	f := b.flow()
	a := b.consent(t, f, "clerk", url.Values{"decision": {"approve"}, "scope": {"read write"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	back, err := url.Parse(a.location)
	require.NoError(t, err)
	status, tok := b.token(t, b.exchange(f, back.Query().Get("code")))
	require.Equal(t, http.StatusOK, status, tok)
	require.Contains(t, toolNames(t, h.URL, tok.AccessToken), "create-customer")

	f = b.flow()
	f.q.Set("client_id", docs.URL+"/liar.json")
	r := b.browser(t).get("/oauth/authorize?" + f.q.Encode())
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Contains(t, r.body, `"field":"client_id"`)
}

// The sweep deletes tokens past their end and authorizations a day past
// theirs; the grant stays listed.
func TestSweep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.flow()
	status, _ := b.token(t, b.exchange(f, b.code(t, f)))
	require.Equal(t, http.StatusOK, status)
	ctx := context.Background()
	n, err := oauth.Sweep(ctx, b.h.Pool)
	require.NoError(t, err)
	require.Zero(t, n, "nothing has ended yet")
	_, err = b.h.Pool.Exec(ctx, `UPDATE oauth_tokens SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	_, err = b.h.Pool.Exec(ctx, `UPDATE oauth_authorizations SET expires_at = now() - interval '25 hours'`)
	require.NoError(t, err)
	n, err = oauth.Sweep(ctx, b.h.Pool)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "an access token, a refresh token, an authorization")
	require.Equal(t, [2]int{1, 0}, b.granted(t))
}

// Many refreshes of one refresh token at once: one is answered, the
// others are its reuse, which revokes the grant (the winner's new tokens
// with it). Many approvals of one consent at once: one code.
func TestConcurrentRefreshAndConsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.flow()
	status, tok := b.token(t, b.exchange(f, b.code(t, f)))
	require.Equal(t, http.StatusOK, status)
	const n = 8
	answers := make([]tokens, n)
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], answers[i] = b.token(t, b.refresh(tok.RefreshToken))
		}()
	}
	wg.Wait()
	var winner tokens
	won := 0
	for i, s := range statuses {
		if s == http.StatusOK {
			won++
			winner = answers[i]
			continue
		}
		require.Equal(t, "invalid_grant", answers[i].Error)
	}
	require.Equal(t, 1, won, statuses)
	require.Equal(t, http.StatusUnauthorized, mcpRequest(t, b.h.URL, winner.AccessToken).status, "the reuse revoked the grant")

	// One consent page, approved from many tabs at once.
	f = b.flow()
	br := b.browser(t)
	consentPath := br.get("/oauth/authorize?" + f.q.Encode()).location
	br.signIn("clerk", consentPath)
	form := url.Values{"csrf_token": {csrf(t, br.get(consentPath).body)}, "decision": {"approve"}, "scope": {"read"}}
	codes := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := br.form(consentPath, form); a.status == http.StatusSeeOther {
				back, err := url.Parse(a.location)
				if err == nil {
					codes[i] = back.Query().Get("code")
				}
			}
		}()
	}
	wg.Wait()
	got := 0
	for _, c := range codes {
		if c != "" {
			got++
		}
	}
	require.Equal(t, 1, got, "one code for one consent")
}

// Registration refuses what it cannot hold a client to, with RFC 7591's
// error naming the field, and registers nothing; a metadata document on
// a private address is never fetched (SSRF).
func TestRegistrationRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clients := func() int {
		var n int
		require.NoError(t, b.h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM oauth_clients`).Scan(&n))
		return n
	}
	before := clients()
	for name, tc := range map[string]struct{ body, code, field string }{
		"no redirect":          {`{"client_name": "X", "redirect_uris": []}`, "invalid_redirect_uri", "redirect_uris"},
		"http elsewhere":       {`{"client_name": "X", "redirect_uris": ["http://agent.example/cb"]}`, "invalid_redirect_uri", "redirect_uris"},
		"script scheme":        {`{"client_name": "X", "redirect_uris": ["javascript:alert(1)"]}`, "invalid_redirect_uri", "redirect_uris"},
		"fragment":             {`{"client_name": "X", "redirect_uris": ["https://agent.example/cb#x"]}`, "invalid_redirect_uri", "redirect_uris"},
		"a secret":             {`{"client_name": "X", "redirect_uris": ["https://agent.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}`, "invalid_client_metadata", "token_endpoint_auth_method"},
		"implicit":             {`{"client_name": "X", "redirect_uris": ["https://agent.example/cb"], "grant_types": ["implicit"]}`, "invalid_client_metadata", "grant_types"},
		"no name":              {`{"redirect_uris": ["https://agent.example/cb"]}`, "invalid_client_metadata", "client_name"},
		"a name that reorders": {`{"client_name": "Agent \u202e", "redirect_uris": ["https://agent.example/cb"]}`, "invalid_client_metadata", "client_name"},
		"not JSON":             {`client_name=X`, "invalid_client_metadata", ""},
	} {
		a := b.post(t, "/oauth/register", "application/json", tc.body)
		require.Equal(t, http.StatusBadRequest, a.status, name)
		var e tokens
		require.NoError(t, json.Unmarshal([]byte(a.body), &e), name)
		require.Equal(t, tc.code, e.Error, name)
		require.Contains(t, e.Description, tc.field, name)
	}
	require.Equal(t, before, clients())

	f := b.flow()
	f.q.Set("client_id", "https://127.0.0.1:1/client.json")
	a := b.browser(t).get("/oauth/authorize?" + f.q.Encode())
	require.Equal(t, http.StatusUnprocessableEntity, a.status)
	require.Contains(t, a.body, `"field":"client_id"`)
	require.Equal(t, before, clients())
}

// A browser-based client's page may fetch the OAuth endpoints when its
// origin is allowed (the setting /mcp's CORS uses, ADR-0025): preflight
// and answers carry the CORS headers. Any other origin is refused with
// 403 before anything is done.
func TestOAuthEndpointsCORS(t *testing.T) {
	t.Parallel()
	allowed, err := origins.Parse("http://localhost:6274")
	require.NoError(t, err)
	h := apptest.New(t, apptest.Options{Config: app.Config{AllowedOrigins: allowed}})
	send := func(method, path, origin, body string, header ...string) answer {
		req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		return do(t, http.DefaultClient, req)
	}
	reg := `{"client_name": "Browser Agent", "redirect_uris": ["http://localhost:6274/oauth/callback"]}`
	for _, path := range oauth.FetchedPaths {
		pre := send(http.MethodOptions, path, "http://localhost:6274", "", "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "content-type, mcp-protocol-version")
		require.Equal(t, http.StatusNoContent, pre.status, path)
		require.Equal(t, "http://localhost:6274", pre.header.Get("Access-Control-Allow-Origin"), path)
		require.Equal(t, "Content-Type, Authorization, Mcp-Protocol-Version", pre.header.Get("Access-Control-Allow-Headers"), path)

		method := http.MethodPost
		if strings.HasPrefix(path, "/.well-known/") {
			method = http.MethodGet
		}
		for _, method := range []string{http.MethodOptions, method} {
			a := send(method, path, "https://evil.example", reg, "Access-Control-Request-Method", "POST")
			require.Equal(t, http.StatusForbidden, a.status, "%s %s", method, path)
			require.Contains(t, a.body, `"error":"access_denied"`)
			require.Empty(t, a.header.Get("Access-Control-Allow-Origin"))
		}
	}
	var n int
	require.NoError(t, h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM oauth_clients`).Scan(&n))
	require.Zero(t, n, "no refused page registered a client")

	a := send(http.MethodPost, "/oauth/register", "http://localhost:6274", reg)
	require.Equal(t, http.StatusCreated, a.status, a.body)
	require.Equal(t, "http://localhost:6274", a.header.Get("Access-Control-Allow-Origin"))
	a = send(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", "http://localhost:6274", "")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "http://localhost:6274", a.header.Get("Access-Control-Allow-Origin"))
	// The service's own pages, and clients that are no page, need no listing.
	for _, origin := range []string{h.URL, ""} {
		require.Equal(t, http.StatusOK, send(http.MethodGet, "/.well-known/oauth-authorization-server", origin, "").status, origin)
	}
}
