// Package oauth makes invoiced the OAuth 2.1 authorization server of its
// own MCP resource (ADR-0023), as the MCP authorization specification
// (2025-11-25) asks: protected resource metadata (RFC 9728), authorization
// server metadata (RFC 8414), the authorization code grant with PKCE S256
// alone, refresh tokens rotated on every use, clients registered
// dynamically (RFC 7591) or known by a Client ID Metadata Document, and
// tokens bound to the /mcp resource (RFC 8707). A grant is one of the
// user's API tokens in the list of them, revoked like them; the consent
// page is the inbox's (web).
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Scope is what a grant allows: reads, or reads and writes. Its two
// values are the scope strings a client asks for ("read", "write").
type Scope string

// The scopes a grant holds.
const (
	ScopeRead      Scope = "read"
	ScopeReadWrite Scope = "read write"
)

// scopesSupported are the scope tokens a client may ask for.
var scopesSupported = []string{"read", "write"}

// MaxScope is the most a user of role may grant a client: approvers
// read (they decide approvals in the inbox, never through an agent).
func MaxScope(role identity.Role) Scope {
	if role == identity.RoleApprover {
		return ScopeRead
	}
	return ScopeReadWrite
}

// Allows reports whether a grant of s may be given to a user of role.
func (s Scope) Allows(role identity.Role) bool {
	return s == ScopeRead || MaxScope(role) == ScopeReadWrite
}

// ParseScope reads a scope from a request ("read", "write", both; empty
// asks for the most) as the one it asks for: write includes read.
func ParseScope(raw string) (Scope, bool) {
	if strings.TrimSpace(raw) == "" {
		return ScopeReadWrite, true
	}
	s := ScopeRead
	for _, tok := range strings.Fields(raw) {
		switch tok {
		case "read":
		case "write":
			s = ScopeReadWrite
		default:
			return "", false
		}
	}
	return s, true
}

// Lifetimes. An access token lives an hour (the MCP specification asks
// for short-lived ones; a client refreshes without its user), a refresh
// token 30 days from its issue (each use issues the next), a pending
// authorization 10 minutes (the user signs in and consents), and a code
// a minute after the consent (the client exchanges it at once).
const (
	DefaultAccessTTL  = time.Hour
	DefaultRefreshTTL = 30 * 24 * time.Hour
	consentTTL        = 10 * time.Minute
	codeTTL           = time.Minute
	// clientDocumentTTL is how long a fetched Client ID Metadata Document
	// is kept before it is fetched again.
	clientDocumentTTL = time.Hour
)

// Token prefixes, so secret scanners find leaked ones and /mcp knows an
// access token from an API token without a statement.
const (
	AccessPrefix  = "ioa_"
	refreshPrefix = "ior_"
	clientPrefix  = "ioc_"
)

// Config is what the authorization server runs on.
type Config struct {
	// PublicURL is where clients reach the service (INVOICED_PUBLIC_URL);
	// empty takes the scheme and host of each request.
	PublicURL string
	// AccessTTL is an access token's lifetime; 0 means DefaultAccessTTL.
	AccessTTL time.Duration
	// ClientDocuments fetches Client ID Metadata Documents; nil uses a
	// client that refuses private and loopback addresses (SSRF).
	ClientDocuments *http.Client
}

// Service is the authorization server of one process.
type Service struct {
	db  *pgxpool.Pool
	cfg Config
}

// NewService builds the authorization server over db.
func NewService(db *pgxpool.Pool, cfg Config) *Service {
	if cfg.AccessTTL == 0 {
		cfg.AccessTTL = DefaultAccessTTL
	}
	if cfg.ClientDocuments == nil {
		cfg.ClientDocuments = guardedClient()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	return &Service{db: db, cfg: cfg}
}

// Base is the service's public URL as a request to it sees it: the
// issuer of its tokens and the origin of its resource.
func (s *Service) Base(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Resource is the URL of the one resource tokens are issued for (RFC 8707).
func (s *Service) Resource(r *http.Request) string { return s.Base(r) + "/mcp" }

// ResourceMetadataURL is where the resource's metadata is (RFC 9728 §3.1).
func (s *Service) ResourceMetadataURL(r *http.Request) string {
	return s.Base(r) + "/.well-known/oauth-protected-resource/mcp"
}

// secret returns prefix and 256 random bits, and their SHA-256.
func secret(prefix string) (string, []byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, fmt.Errorf("oauth entropy: %w", err)
	}
	tok := prefix + base64.RawURLEncoding.EncodeToString(raw[:])
	return tok, hash(tok), nil
}

func hash(tok string) []byte {
	sum := sha256.Sum256([]byte(tok))
	return sum[:]
}

// Principal authenticates an access token for /mcp: the user of its
// grant, read-only when the grant is. An unknown, expired or revoked
// token, a revoked grant and a disabled user are one 401.
func (s *Service) Principal(ctx context.Context, token string) (identity.Principal, error) {
	return accessPrincipal(ctx, s.db, token)
}

// Scheme is the bearer scheme of access tokens, for /mcp's
// identity.Authenticate.
func (s *Service) Scheme() identity.BearerScheme {
	return identity.BearerScheme{Prefix: AccessPrefix, Check: s.Principal}
}
