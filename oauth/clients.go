package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"code.dny.dev/ssrf"
	"github.com/invoiced/invoiced/text"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxRedirectURIs bounds a client's redirect URIs (the table checks it).
const maxRedirectURIs = 10

// maxClientName bounds a client's name (characters): the consent page
// shows it.
const maxClientName = 100

// maxDocumentBytes bounds a Client ID Metadata Document: the draft asks
// authorization servers to refuse larger ones (5 KB).
const maxDocumentBytes = 5 << 10

// guardedClient fetches metadata documents: public addresses only, 5 s.
func guardedClient() *http.Client {
	guard := ssrf.New(ssrf.WithAnyPort())
	d := &net.Dialer{Timeout: 5 * time.Second, Control: guard.Safe}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DialContext: d.DialContext, TLSHandshakeTimeout: 5 * time.Second},
		// A document is at its id; a redirect elsewhere is not it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Register registers a client (RFC 7591): a public client (no secret;
// PKCE protects its codes) with its redirect URIs and name.
func (s *Service) Register(ctx context.Context, m *oauthex.ClientRegistrationMetadata) (*oauthex.ClientRegistrationResponse, error) {
	c, err := clientFromMetadata(m)
	if err != nil {
		return nil, err
	}
	id, _, err := secret(clientPrefix)
	if err != nil {
		return nil, err
	}
	// 128 bits name a client well enough; the id is not a secret.
	c.ID = id[:len(clientPrefix)+22]
	if err := ClientPut(ctx, s.db, c); err != nil {
		return nil, err
	}
	out := *m
	out.RedirectURIs, out.ClientName = c.RedirectURIs, c.Name
	out.TokenEndpointAuthMethod = "none"
	out.GrantTypes = []string{"authorization_code", "refresh_token"}
	out.ResponseTypes = []string{"code"}
	return &oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: out, ClientID: c.ID, ClientIDIssuedAt: time.Now()}, nil
}

// clientFromMetadata checks what a registration or a metadata document
// says of a client.
func clientFromMetadata(m *oauthex.ClientRegistrationMetadata) (*Client, error) {
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > maxRedirectURIs {
		return nil, &Error{Code: "invalid_redirect_uri", Description: fmt.Sprintf("redirect_uris: give 1 to %d", maxRedirectURIs)}
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, &Error{Code: "invalid_redirect_uri", Description: "redirect_uris: " + err.Error()}
		}
	}
	if a := m.TokenEndpointAuthMethod; a != "" && a != "none" {
		return nil, &Error{Code: "invalid_client_metadata", Description: "token_endpoint_auth_method: only none (a public client with PKCE)"}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, &Error{Code: "invalid_client_metadata", Description: "grant_types: only authorization_code and refresh_token"}
		}
	}
	for _, r := range m.ResponseTypes {
		if r != "code" {
			return nil, &Error{Code: "invalid_client_metadata", Description: "response_types: only code"}
		}
	}
	name := strings.TrimSpace(m.ClientName)
	if name == "" {
		return nil, &Error{Code: "invalid_client_metadata", Description: "client_name: is required (the user sees it before consenting)"}
	}
	if err := text.Name(name); err != nil || utf8.RuneCountInString(name) > maxClientName {
		return nil, &Error{Code: "invalid_client_metadata", Description: fmt.Sprintf("client_name: at most %d characters that show as written", maxClientName)}
	}
	return &Client{Name: name, RedirectURIs: slices.Clone(m.RedirectURIs)}, nil
}

// checkRedirectURI admits an https URL, an http URL on a loopback
// address (a native client's own listener, RFC 8252 §7.3) or a
// private-use scheme (RFC 8252 §7.1: cursor://…); never a fragment.
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%q has a fragment", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if isLoopback(u) {
			return nil
		}
		return fmt.Errorf("%q: http only to a loopback address", raw)
	case "javascript", "data", "file", "vbscript", "blob":
		return fmt.Errorf("%q: scheme %s is not a redirect", raw, u.Scheme)
	}
	return nil
}

// isLoopback reports whether u is http to 127.0.0.0/8, [::1] or localhost.
func isLoopback(u *url.URL) bool {
	if u.Scheme != "http" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// redirectAllowed reports whether uri is one of c's redirect URIs, the
// same byte for byte, or a loopback one of them on another port (RFC
// 8252 §7.3: a native client listens on whatever port is free).
func (c *Client) redirectAllowed(uri string) bool {
	if slices.Contains(c.RedirectURIs, uri) {
		return true
	}
	u, err := url.Parse(uri)
	if err != nil || !isLoopback(u) {
		return false
	}
	for _, r := range c.RedirectURIs {
		ru, err := url.Parse(r)
		if err != nil || !isLoopback(ru) {
			continue
		}
		if ru.Hostname() == u.Hostname() && ru.EscapedPath() == u.EscapedPath() && ru.RawQuery == u.RawQuery &&
			ru.User == nil && u.User == nil && ru.Fragment == "" && u.Fragment == "" {
			return true
		}
	}
	return false
}

// isDocumentID reports whether a client id names a metadata document:
// an https URL with a path (draft-ietf-oauth-client-id-metadata-document).
func isDocumentID(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/" &&
		u.Fragment == "" && u.User == nil
}

// client returns client id: a registered one, or the metadata document
// it names, fetched when not known or older than clientDocumentTTL.
func (s *Service) client(ctx context.Context, id string) (*Client, error) {
	c, err := ClientGet(ctx, s.db, id)
	if err != nil && !errors.Is(err, errNoClient) {
		return nil, err
	}
	if !isDocumentID(id) {
		return c, err
	}
	if c != nil && time.Since(c.FetchedAt) < clientDocumentTTL {
		return c, nil
	}
	c, err = s.fetchDocument(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := ClientPut(ctx, s.db, c); err != nil {
		return nil, err
	}
	return c, nil
}

// fetchDocument reads the Client ID Metadata Document at id.
func (s *Service) fetchDocument(ctx context.Context, id string) (*Client, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, errNoClient
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.ClientDocuments.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: fetching its metadata document: %v", errNoClient, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: its metadata document answered %d", errNoClient, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil || len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("%w: its metadata document is unreadable or over %d bytes", errNoClient, maxDocumentBytes)
	}
	var doc struct {
		oauthex.ClientRegistrationMetadata
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: its metadata document is not JSON", errNoClient)
	}
	if doc.ClientID != id {
		return nil, fmt.Errorf("%w: its metadata document names another client_id", errNoClient)
	}
	c, err := clientFromMetadata(&doc.ClientRegistrationMetadata)
	if err != nil {
		return nil, fmt.Errorf("%w: its metadata document: %v", errNoClient, err)
	}
	c.ID, c.MetadataDocument = id, true
	return c, nil
}
