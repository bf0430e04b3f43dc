package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/invoiced/invoiced/identity"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/oauth2"
)

// benchPassword is the bench user's inbox password, set for the consent
// page's sign-in.
const benchPassword = "bench-mcp password"

// oauthClient is a registered client and its user's signed-in browser,
// which approve grants the way a host and its user do (ADR-0023).
type oauthClient struct {
	base, clientID string
	browser        *http.Client
}

const benchRedirect = "http://127.0.0.1/callback"

// newOAuthClient gives the bench user a password, signs them in once and
// registers a client.
func newOAuthClient(ctx context.Context, s *server, dbURL string) (*oauthClient, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := identity.PasswordSet(ctx, pool, "bench", benchPassword); err != nil {
		return nil, err
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	o := &oauthClient{base: s.base, browser: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := o.json(http.MethodPost, "/oauth/register", "application/json",
		`{"client_name":"bench-mcp","redirect_uris":["`+benchRedirect+`"]}`, http.StatusCreated, &reg); err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	o.clientID = reg.ClientID
	page, _, err := o.do(http.MethodGet, "/login", "", "", http.StatusOK)
	if err != nil {
		return nil, err
	}
	form := url.Values{"csrf_token": {csrfOf(page)}, "username": {"bench"}, "password": {benchPassword}, "next": {"/inbox"}}
	if _, _, err := o.do(http.MethodPost, "/login", "application/x-www-form-urlencoded", form.Encode(), http.StatusSeeOther); err != nil {
		return nil, fmt.Errorf("sign in: %w", err)
	}
	return o, nil
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrfOf(page string) string {
	if m := csrfRE.FindStringSubmatch(page); m != nil {
		return m[1]
	}
	return ""
}

func (o *oauthClient) do(method, path, ctype, body string, want int) (string, string, error) {
	req, err := http.NewRequest(method, o.base+path, strings.NewReader(body))
	if err != nil {
		return "", "", err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := o.browser.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode != want {
		return "", "", fmt.Errorf("%s %s: status %d: %.300s", method, path, resp.StatusCode, b)
	}
	return string(b), resp.Header.Get("Location"), nil
}

func (o *oauthClient) json(method, path, ctype, body string, want int, v any) error {
	b, _, err := o.do(method, path, ctype, body, want)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(b), v)
}

// tokenAnswer is the token endpoint's answer.
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

// grant runs one authorization to its end: authorize, consent, code,
// tokens.
func (o *oauthClient) grant() (tokenAnswer, error) {
	v := oauth2.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {o.clientID}, "redirect_uri": {benchRedirect},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(v)}, "code_challenge_method": {"S256"},
		"resource": {o.base + "/mcp"}, "scope": {"read write"}}
	_, consent, err := o.do(http.MethodGet, "/oauth/authorize?"+q.Encode(), "", "", http.StatusFound)
	if err != nil {
		return tokenAnswer{}, err
	}
	page, _, err := o.do(http.MethodGet, consent, "", "", http.StatusOK)
	if err != nil {
		return tokenAnswer{}, err
	}
	form := url.Values{"csrf_token": {csrfOf(page)}, "decision": {"approve"}, "scope": {"read write"}}
	_, back, err := o.do(http.MethodPost, consent, "application/x-www-form-urlencoded", form.Encode(), http.StatusSeeOther)
	if err != nil {
		return tokenAnswer{}, err
	}
	u, err := url.Parse(back)
	if err != nil {
		return tokenAnswer{}, err
	}
	ex := url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "code_verifier": {v},
		"redirect_uri": {benchRedirect}, "client_id": {o.clientID}, "resource": {o.base + "/mcp"}}
	var t tokenAnswer
	err = o.json(http.MethodPost, "/oauth/token", "application/x-www-form-urlencoded", ex.Encode(), http.StatusOK, &t)
	return t, err
}

// grants runs n authorizations.
func (o *oauthClient) grants(n int) ([]tokenAnswer, error) {
	out := make([]tokenAnswer, n)
	for i := range out {
		var err error
		if out[i], err = o.grant(); err != nil {
			return nil, fmt.Errorf("grant %d: %w", i, err)
		}
	}
	return out, nil
}

// mcpOAuthSide is mcpSide with each worker's OAuth access token, one
// grant each, made before the rounds.
func mcpOAuthSide(s *server, grants []tokenAnswer) side {
	mcp := mcpSide(s)
	var mu sync.Mutex
	next := 0
	return side{name: "OAuth", newWorker: func(c *http.Client) (func() error, error) {
		mu.Lock()
		token := grants[next%len(grants)].AccessToken
		next++
		mu.Unlock()
		return mcp.withToken(token)(c)
	}}
}

// tokenSide refreshes, each worker along its own grant's chain of
// refresh tokens (each use issues the next): the token endpoint's issue
// rate, an access and a refresh token each.
func tokenSide(o *oauthClient, grants []tokenAnswer) side {
	chains := make([]string, len(grants))
	for i, g := range grants {
		chains[i] = g.RefreshToken
	}
	var mu sync.Mutex
	next := 0
	return side{name: "token", newWorker: func(c *http.Client) (func() error, error) {
		mu.Lock()
		slot := next % len(chains)
		next++
		mu.Unlock()
		return func() error {
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {chains[slot]}, "client_id": {o.clientID}}
			resp, err := c.Post(o.base+"/oauth/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var t tokenAnswer
			if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || resp.StatusCode != http.StatusOK || t.RefreshToken == "" {
				return fmt.Errorf("refresh: status %d: %v", resp.StatusCode, err)
			}
			chains[slot] = t.RefreshToken
			return nil
		}, nil
	}}
}
