package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/url"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"
)

// Error is an OAuth error response (RFC 6749 §4.1.2.1, §5.2; RFC 7591
// §3.2.2): the code a client acts on and a description naming the
// parameter. redirect, when set, is where the browser is sent with it.
type Error struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	redirect    string
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

// Redirect is where an authorization error sends the browser; empty for
// an error answered at the token or registration endpoint.
func (e *Error) Redirect() string { return e.redirect }

func invalidGrant(why string) *Error { return &Error{Code: "invalid_grant", Description: why} }

// AuthorizeRequest is an authorization request's parameters.
type AuthorizeRequest struct {
	ResponseType        string
	ClientID            string
	RedirectURI         string
	State               string
	Scope               string
	CodeChallenge       string
	CodeChallengeMethod string
	Resource            []string
}

// challengeRE is an S256 code challenge: base64url of 32 bytes.
var challengeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// verifierRE is a code verifier (RFC 7636 §4.1).
var verifierRE = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// Authorize checks an authorization request and stores it to wait for
// its user's consent. A request whose client or redirect URI cannot be
// trusted with an answer is a problem naming client_id or redirect_uri;
// any other refusal is an *Error to redirect to the client with.
func (s *Service) Authorize(ctx context.Context, q AuthorizeRequest, base string) (*Authorization, error) {
	if q.ClientID == "" {
		return nil, problem.Invalid("client_id", "is required")
	}
	c, err := s.client(ctx, q.ClientID)
	if errors.Is(err, errNoClient) {
		return nil, problem.Invalid("client_id", "names no registered client nor a client metadata document this server could read")
	}
	if err != nil {
		return nil, err
	}
	if q.RedirectURI == "" || !c.redirectAllowed(q.RedirectURI) {
		return nil, problem.Invalid("redirect_uri", "is not one of the client's redirect URIs")
	}
	refuse := func(code, why string) (*Authorization, error) {
		return nil, &Error{Code: code, Description: why, redirect: answer(q.RedirectURI, q.State, base, url.Values{"error": {code}, "error_description": {why}})}
	}
	if q.ResponseType != "code" {
		return refuse("unsupported_response_type", "response_type: only code")
	}
	if q.CodeChallenge == "" {
		return refuse("invalid_request", "code_challenge: PKCE is required")
	}
	if q.CodeChallengeMethod != "S256" {
		return refuse("invalid_request", "code_challenge_method: only S256")
	}
	if !challengeRE.MatchString(q.CodeChallenge) {
		return refuse("invalid_request", "code_challenge: not an S256 challenge")
	}
	resource := base + "/mcp"
	for _, r := range q.Resource {
		if r != resource {
			return refuse("invalid_target", "resource: this server issues tokens for "+resource+" only")
		}
	}
	scope, ok := ParseScope(q.Scope)
	if !ok {
		return refuse("invalid_scope", "scope: read, write or both")
	}
	a := &Authorization{ClientID: c.ID, RedirectURI: q.RedirectURI, State: q.State, Requested: scope,
		CodeChallenge: q.CodeChallenge, Resource: resource}
	if err := AuthorizationCreate(ctx, s.db, a); err != nil {
		return nil, err
	}
	return a, nil
}

// answer is the redirect URI with an authorization response's
// parameters, the state and the issuer (RFC 9207) added to its query.
func answer(redirect, state, iss string, v url.Values) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return redirect
	}
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	if state != "" {
		q.Set("state", state)
	}
	q.Set("iss", iss)
	u.RawQuery = q.Encode()
	return u.String()
}

// Consent is the pending authorization a user is asked about, and its
// client.
type Consent struct {
	*Authorization
	Client *Client
}

// ConsentGet returns pending authorization id with its client.
func (s *Service) ConsentGet(ctx context.Context, id uuid.UUID) (*Consent, error) {
	a, err := AuthorizationPending(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	c, err := ClientGet(ctx, s.db, a.ClientID)
	if err != nil {
		return nil, store.MapError(err, "client")
	}
	return &Consent{Authorization: a, Client: c}, nil
}

// Approve records user's consent to authorization id with scope and
// returns where the browser goes: the client's redirect URI with the
// code. The user must be enabled and scope within their role (a 403 or
// a 422 naming scope, nothing recorded).
func (s *Service) Approve(ctx context.Context, id, userID uuid.UUID, scope Scope, base string) (string, error) {
	code, sum, err := secret("")
	if err != nil {
		return "", err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (string, error) {
		u, err := identity.UserLockShareTx(ctx, tx, userID)
		if err != nil {
			return "", err
		}
		if u.Disabled {
			return "", problem.Forbidden("a disabled user cannot grant access")
		}
		if scope != ScopeRead && scope != ScopeReadWrite {
			return "", problem.Invalid("scope", "read or read write")
		}
		if !scope.Allows(u.Role) {
			return "", problem.Invalid("scope", "a user of role %s may grant read access only", u.Role)
		}
		a, err := authorizationConsentTx(ctx, tx, id, userID, scope, sum)
		if err != nil {
			return "", err
		}
		return answer(a.RedirectURI, a.State, base, url.Values{"code": {code}}), nil
	})
}

// Deny ends authorization id without a code and returns where the
// browser goes: the client's redirect URI with access_denied.
func (s *Service) Deny(ctx context.Context, id uuid.UUID, base string) (string, error) {
	a, err := authorizationEnd(ctx, s.db, id)
	if err != nil {
		return "", err
	}
	return answer(a.RedirectURI, a.State, base, url.Values{"error": {"access_denied"}, "error_description": {"the user denied access"}}), nil
}

// TokenResponse is a successful token response (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        Scope  `json:"scope"`
}

// Token answers a token request (form f) for the resource at base.
func (s *Service) Token(ctx context.Context, f url.Values, base string) (*TokenResponse, error) {
	for _, r := range f["resource"] {
		if r != base+"/mcp" {
			return nil, &Error{Code: "invalid_target", Description: "resource: this server issues tokens for " + base + "/mcp only"}
		}
	}
	if f.Get("client_id") == "" {
		return nil, &Error{Code: "invalid_request", Description: "client_id: is required (a public client names itself)"}
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		return s.exchangeCode(ctx, f)
	case "refresh_token":
		return s.refresh(ctx, f)
	case "":
		return nil, &Error{Code: "invalid_request", Description: "grant_type: is required"}
	}
	return nil, &Error{Code: "unsupported_grant_type", Description: "grant_type: authorization_code or refresh_token"}
}

// exchangeCode exchanges an authorization code, once. Its checks commit
// the code's use whatever they find, so a code is never tried twice; a
// code used before revokes the grant it was exchanged for (OAuth 2.1
// §4.1.3).
func (s *Service) exchangeCode(ctx context.Context, f url.Values) (*TokenResponse, error) {
	code, verifier := f.Get("code"), f.Get("code_verifier")
	if code == "" {
		return nil, &Error{Code: "invalid_request", Description: "code: is required"}
	}
	if verifier == "" {
		return nil, &Error{Code: "invalid_request", Description: "code_verifier: is required (PKCE)"}
	}
	var refusal *Error
	out, err := store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*TokenResponse, error) {
		a, err := authorizationByCodeTx(ctx, tx, hash(code))
		if errors.Is(err, pgx.ErrNoRows) {
			refusal = invalidGrant("code: unknown")
			return nil, nil
		}
		if err != nil {
			return nil, store.MapError(err, "authorization")
		}
		if a.ConsumedAt != nil {
			refusal = invalidGrant("code: used before; the tokens issued for it are revoked")
			if a.GrantID != nil {
				return nil, grantRevoke(ctx, tx, *a.GrantID)
			}
			return nil, nil
		}
		refusal = checkExchange(a, f.Get("client_id"), f.Get("redirect_uri"), verifier)
		if refusal != nil {
			return nil, authorizationConsumeTx(ctx, tx, a.ID, nil)
		}
		u, err := identity.UserLockShareTx(ctx, tx, *a.UserID)
		if err != nil {
			return nil, err
		}
		if u.Disabled || !a.Scope.Allows(u.Role) {
			refusal = invalidGrant("code: the user who granted it may no longer")
			return nil, authorizationConsumeTx(ctx, tx, a.ID, nil)
		}
		c, err := ClientGet(ctx, tx, a.ClientID)
		if err != nil {
			return nil, store.MapError(err, "client")
		}
		grant, err := grantCreateTx(ctx, tx, u.ID, c, *a.Scope)
		if err != nil {
			return nil, err
		}
		if err := authorizationConsumeTx(ctx, tx, a.ID, &grant); err != nil {
			return nil, err
		}
		return s.issueTx(ctx, tx, grant, *a.Scope)
	})
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	return out, nil
}

// checkExchange checks a code's exchange against its authorization.
func checkExchange(a *Authorization, clientID, redirectURI, verifier string) *Error {
	switch {
	case time.Now().After(a.ExpiresAt):
		return invalidGrant("code: expired")
	case clientID != a.ClientID:
		return invalidGrant("client_id: the code was issued to another client")
	case redirectURI != a.RedirectURI:
		return invalidGrant("redirect_uri: differs from the authorization request's")
	case !verifierRE.MatchString(verifier):
		return invalidGrant("code_verifier: 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
	case subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(verifier)), []byte(a.CodeChallenge)) != 1:
		return invalidGrant("code_verifier: does not match the code_challenge")
	}
	return nil
}

// refresh exchanges a refresh token for new tokens, once: a second use
// of one revokes its grant, whoever holds the tokens issued since
// (OAuth 2.1 §4.3.1, rotation).
func (s *Service) refresh(ctx context.Context, f url.Values) (*TokenResponse, error) {
	tok := f.Get("refresh_token")
	if tok == "" {
		return nil, &Error{Code: "invalid_request", Description: "refresh_token: is required"}
	}
	want, ok := ParseScope(f.Get("scope"))
	if !ok {
		return nil, &Error{Code: "invalid_scope", Description: "scope: read, write or both"}
	}
	sum := hash(tok)
	var refusal *Error
	out, err := store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*TokenResponse, error) {
		h, err := refreshLockTx(ctx, tx, sum)
		if errors.Is(err, pgx.ErrNoRows) {
			refusal = invalidGrant("refresh_token: unknown")
			return nil, nil
		}
		if err != nil {
			return nil, store.MapError(err, "token")
		}
		switch {
		case h.Used:
			refusal = invalidGrant("refresh_token: used before; its grant is revoked")
			return nil, grantRevoke(ctx, tx, h.GrantID)
		case !h.Live:
			refusal = invalidGrant("refresh_token: expired or revoked")
		case f.Get("client_id") != h.ClientID:
			refusal = invalidGrant("client_id: the refresh token was issued to another client")
		case !h.Scope.Allows(h.User.Role):
			refusal = invalidGrant("refresh_token: the user who granted it may no longer")
		case f.Get("scope") != "" && want == ScopeReadWrite && h.Scope == ScopeRead:
			refusal = &Error{Code: "invalid_scope", Description: "scope: the grant is read only"}
		}
		if refusal != nil {
			return nil, nil
		}
		if err := refreshUseTx(ctx, tx, sum); err != nil {
			return nil, err
		}
		return s.issueTx(ctx, tx, h.GrantID, h.Scope)
	})
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	return out, nil
}

// issueTx issues an access token and a refresh token of grant.
func (s *Service) issueTx(ctx context.Context, tx pgx.Tx, grant uuid.UUID, scope Scope) (*TokenResponse, error) {
	access, asum, err := secret(AccessPrefix)
	if err != nil {
		return nil, err
	}
	refresh, rsum, err := secret(refreshPrefix)
	if err != nil {
		return nil, err
	}
	if err := tokenInsertTx(ctx, tx, grant, asum, false, s.cfg.AccessTTL); err != nil {
		return nil, err
	}
	if err := tokenInsertTx(ctx, tx, grant, rsum, true, DefaultRefreshTTL); err != nil {
		return nil, err
	}
	return &TokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(s.cfg.AccessTTL / time.Second),
		RefreshToken: refresh, Scope: scope}, nil
}

// Revoke revokes the grant of an access or refresh token (RFC 7009): all
// its tokens. An unknown token, or one of another client, is no error
// (§2.2).
func (s *Service) Revoke(ctx context.Context, tok, clientID string) error {
	if tok == "" {
		return &Error{Code: "invalid_request", Description: "token: is required"}
	}
	grant, client, ok, err := grantOfToken(ctx, s.db, tok)
	if err != nil || !ok || (clientID != "" && clientID != client) {
		return err
	}
	return grantRevoke(ctx, s.db, grant)
}
