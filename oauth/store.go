package oauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// ---- clients ----

// Client is a client as registered or as its metadata document says.
type Client struct {
	ID               string
	Name             string
	RedirectURIs     []string
	MetadataDocument bool
	FetchedAt        time.Time
}

const clientColumns = `c.id, c.name, c.redirect_uris, c.metadata_document, c.fetched_at`

func scanClient(row pgx.Row) (*Client, error) {
	var c Client
	if err := row.Scan(&c.ID, &c.Name, &c.RedirectURIs, &c.MetadataDocument, &c.FetchedAt); err != nil {
		return nil, err
	}
	return &c, nil
}

// errNoClient is a client id nothing is known of.
var errNoClient = errors.New("oauth: unknown client")

// ClientGet returns client id, errNoClient when there is none.
func ClientGet(ctx context.Context, db store.Executor, id string) (*Client, error) {
	c, err := scanClient(db.QueryRow(ctx, `SELECT `+clientColumns+` FROM oauth_clients c WHERE c.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoClient
	}
	return c, store.MapError(err, "client")
}

// ClientPut stores c, replacing what was known of its id (a metadata
// document fetched again).
func ClientPut(ctx context.Context, db store.Executor, c *Client) error {
	_, err := db.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, metadata_document)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET name = $2, redirect_uris = $3, fetched_at = now()`,
		c.ID, c.Name, c.RedirectURIs, c.MetadataDocument)
	return store.MapError(err, "client")
}

// ---- authorizations ----

// Authorization is one authorization request, from /oauth/authorize to
// its code's exchange.
type Authorization struct {
	ID            uuid.UUID
	ClientID      string
	RedirectURI   string
	State         string
	Requested     Scope
	CodeChallenge string
	Resource      string
	// UserID and Scope are the consent's; nil before it.
	UserID     *uuid.UUID
	Scope      *Scope
	GrantID    *uuid.UUID
	ConsumedAt *time.Time
	ExpiresAt  time.Time
}

const authorizationColumns = `a.id, a.client_id, a.redirect_uri, a.state, a.requested, a.code_challenge, a.resource,
	a.user_id, a.scope, a.grant_id, a.consumed_at, a.expires_at`

func scanAuthorization(row pgx.Row) (*Authorization, error) {
	var a Authorization
	if err := row.Scan(&a.ID, &a.ClientID, &a.RedirectURI, &a.State, &a.Requested, &a.CodeChallenge, &a.Resource,
		&a.UserID, &a.Scope, &a.GrantID, &a.ConsumedAt, &a.ExpiresAt); err != nil {
		return nil, err
	}
	return &a, nil
}

// AuthorizationCreate stores a pending authorization request.
func AuthorizationCreate(ctx context.Context, db store.Executor, a *Authorization) error {
	a.ID = uuid.New()
	err := db.QueryRow(ctx, `INSERT INTO oauth_authorizations
		(id, client_id, redirect_uri, state, requested, code_challenge, resource, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 second') RETURNING expires_at`,
		a.ID, a.ClientID, a.RedirectURI, a.State, a.Requested, a.CodeChallenge, a.Resource, int(consentTTL/time.Second)).Scan(&a.ExpiresAt)
	return store.MapError(err, "authorization")
}

// AuthorizationPending returns authorization id while it waits for its
// user's consent: 404 once decided, expired or unknown.
func AuthorizationPending(ctx context.Context, db store.Executor, id uuid.UUID) (*Authorization, error) {
	a, err := scanAuthorization(db.QueryRow(ctx, `SELECT `+authorizationColumns+` FROM oauth_authorizations a
		WHERE a.id = $1 AND a.user_id IS NULL AND a.consumed_at IS NULL AND a.expires_at > now()`, id))
	return a, store.MapError(err, "authorization request")
}

// authorizationConsentTx records the user's consent to authorization id
// with scope and the SHA-256 of its code, which is then valid for
// codeTTL; 404 when it no longer waits for one.
func authorizationConsentTx(ctx context.Context, tx pgx.Tx, id, userID uuid.UUID, scope Scope, code []byte) (*Authorization, error) {
	a, err := scanAuthorization(tx.QueryRow(ctx, `UPDATE oauth_authorizations AS a
		SET user_id = $2, scope = $3, code_sha256 = $4, expires_at = now() + $5 * interval '1 second'
		WHERE a.id = $1 AND a.user_id IS NULL AND a.consumed_at IS NULL AND a.expires_at > now()
		RETURNING `+authorizationColumns, id, userID, scope, code, int(codeTTL/time.Second)))
	return a, store.MapError(err, "authorization request")
}

// authorizationEnd ends authorization id without a code (denied).
func authorizationEnd(ctx context.Context, db store.Executor, id uuid.UUID) (*Authorization, error) {
	a, err := scanAuthorization(db.QueryRow(ctx, `UPDATE oauth_authorizations AS a SET consumed_at = now()
		WHERE a.id = $1 AND a.user_id IS NULL AND a.consumed_at IS NULL AND a.expires_at > now()
		RETURNING `+authorizationColumns, id))
	return a, store.MapError(err, "authorization request")
}

// authorizationByCodeTx returns the authorization whose code hashes to
// code, locked for its exchange; pgx.ErrNoRows when there is none.
func authorizationByCodeTx(ctx context.Context, tx pgx.Tx, code []byte) (*Authorization, error) {
	return scanAuthorization(tx.QueryRow(ctx, `SELECT `+authorizationColumns+` FROM oauth_authorizations a
		WHERE a.code_sha256 = $1 FOR UPDATE`, code))
}

// authorizationConsumeTx marks authorization id exchanged, for grant
// (nil when the exchange was refused).
func authorizationConsumeTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, grant *uuid.UUID) error {
	_, err := tx.Exec(ctx, `UPDATE oauth_authorizations SET consumed_at = now(), grant_id = $2 WHERE id = $1`, id, grant)
	return store.MapError(err, "authorization")
}

// ---- grants and their tokens ----

// grantCreateTx adds user's grant to client as one of the user's tokens.
func grantCreateTx(ctx context.Context, tx pgx.Tx, userID uuid.UUID, c *Client, scope Scope) (uuid.UUID, error) {
	id := uuid.Must(uuid.NewV7())
	_, err := tx.Exec(ctx, `INSERT INTO api_tokens (id, user_id, name, oauth_client_id, scope) VALUES ($1, $2, $3, $4, $5)`,
		id, userID, c.Name, c.ID, scope)
	return id, store.MapError(err, "grant")
}

// grantRevoke revokes grant id: every token of it stops working.
func grantRevoke(ctx context.Context, db store.Executor, id uuid.UUID) error {
	_, err := db.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, id)
	return store.MapError(err, "grant")
}

// tokenInsertTx stores a token of grant by its SHA-256.
func tokenInsertTx(ctx context.Context, tx pgx.Tx, grant uuid.UUID, sum []byte, refresh bool, ttl time.Duration) error {
	_, err := tx.Exec(ctx, `INSERT INTO oauth_tokens (token_sha256, grant_id, refresh, expires_at)
		VALUES ($1, $2, $3, now() + $4 * interval '1 second')`, sum, grant, refresh, int(ttl/time.Second))
	return store.MapError(err, "token")
}

// refreshHeld is a refresh token as its exchange finds it, locked.
type refreshHeld struct {
	GrantID  uuid.UUID
	ClientID string
	Scope    Scope
	Used     bool
	Live     bool // unexpired, grant unrevoked, user enabled
	User     *identity.User
}

// refreshLockTx returns the refresh token hashing to sum, locked for its
// one use; pgx.ErrNoRows when there is none.
func refreshLockTx(ctx context.Context, tx pgx.Tx, sum []byte) (*refreshHeld, error) {
	var h refreshHeld
	u, err := identity.ScanUser(tx.QueryRow(ctx, `SELECT `+identity.UserColumns+`, o.grant_id, g.oauth_client_id, g.scope,
			o.used_at IS NOT NULL, o.expires_at > now() AND g.revoked_at IS NULL AND NOT u.disabled
		  FROM oauth_tokens o JOIN api_tokens g ON g.id = o.grant_id JOIN users u ON u.id = g.user_id
		 WHERE o.token_sha256 = $1 AND o.refresh
		   FOR UPDATE OF o`, sum), &h.GrantID, &h.ClientID, &h.Scope, &h.Used, &h.Live)
	if err != nil {
		return nil, err
	}
	h.User = u
	return &h, nil
}

// refreshUseTx marks the refresh token hashing to sum used.
func refreshUseTx(ctx context.Context, tx pgx.Tx, sum []byte) error {
	_, err := tx.Exec(ctx, `UPDATE oauth_tokens SET used_at = now() WHERE token_sha256 = $1`, sum)
	return store.MapError(err, "token")
}

// lastUsedGranularity bounds writes of a grant's last_used_at to one a
// minute, as for API tokens: authentication stays a read.
const lastUsedGranularity = time.Minute

var accessSQL = fmt.Sprintf(`SELECT `+identity.UserColumns+`, g.id, g.scope, g.last_used_at IS NULL OR g.last_used_at < now() - interval '%d seconds'
	  FROM oauth_tokens o JOIN api_tokens g ON g.id = o.grant_id JOIN users u ON u.id = g.user_id
	 WHERE o.token_sha256 = $1 AND NOT o.refresh AND o.expires_at > now() AND g.revoked_at IS NULL AND NOT u.disabled`,
	int(lastUsedGranularity/time.Second))

// tokenRefused is the one answer to an access token that does not
// authenticate, whatever the reason.
func tokenRefused() error { return problem.Unauthenticated("the bearer token is not valid") }

// accessPrincipal returns the principal of access token tok.
func accessPrincipal(ctx context.Context, db store.Executor, tok string) (identity.Principal, error) {
	if len(tok) > 128 {
		return identity.Principal{}, tokenRefused()
	}
	var (
		grant uuid.UUID
		scope Scope
		stale bool
	)
	u, err := identity.ScanUser(db.QueryRow(ctx, accessSQL, hash(tok)), &grant, &scope, &stale)
	if errors.Is(err, pgx.ErrNoRows) {
		return identity.Principal{}, tokenRefused()
	}
	if err != nil {
		return identity.Principal{}, store.MapError(err, "token")
	}
	if stale {
		if _, err := db.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE id = $1`, grant); err != nil {
			return identity.Principal{}, store.MapError(err, "token")
		}
	}
	p := u.Principal()
	p.ReadOnly = scope == ScopeRead
	return p, nil
}

// grantOfToken returns the grant of access or refresh token tok, for
// revocation; ok false when there is none.
func grantOfToken(ctx context.Context, db store.Executor, tok string) (uuid.UUID, string, bool, error) {
	var id uuid.UUID
	var client string
	err := db.QueryRow(ctx, `SELECT g.id, g.oauth_client_id FROM oauth_tokens o JOIN api_tokens g ON g.id = o.grant_id
		WHERE o.token_sha256 = $1`, hash(tok)).Scan(&id, &client)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, "", false, nil
	}
	return id, client, err == nil, store.MapError(err, "token")
}

// Sweep deletes authorizations and tokens past their end; grants stay
// listed with the user's tokens.
func Sweep(ctx context.Context, db store.Executor) (int64, error) {
	var n int64
	for _, q := range []string{
		`DELETE FROM oauth_authorizations WHERE expires_at < now() - interval '1 day'`,
		`DELETE FROM oauth_tokens WHERE expires_at < now()`,
	} {
		tag, err := db.Exec(ctx, q)
		if err != nil {
			return n, store.MapError(err, "oauth")
		}
		n += tag.RowsAffected()
	}
	return n, nil
}
