// Package oauthtest makes OAuth grants for tests that need a user's
// access token without driving the consent page (oauth_test.go drives it).
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/oauth"
	"github.com/invoiced/invoiced/store"
	"github.com/stretchr/testify/require"
)

// Grant gives user a grant of scope to a test client, as an approved
// consent and a code's exchange leave it, and returns an access token
// of it (an hour) and the grant's id.
func Grant(ctx context.Context, t testing.TB, db store.Executor, user uuid.UUID, scope oauth.Scope) (string, uuid.UUID) {
	t.Helper()
	_, err := db.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, metadata_document)
		VALUES ('ioc_oauthtest', 'oauthtest agent', '{http://127.0.0.1/callback}', false) ON CONFLICT DO NOTHING`)
	require.NoError(t, err)
	grant := uuid.Must(uuid.NewV7())
	_, err = db.Exec(ctx, `INSERT INTO api_tokens (id, user_id, name, oauth_client_id, scope) VALUES ($1, $2, 'oauthtest agent', 'ioc_oauthtest', $3)`,
		grant, user, scope)
	require.NoError(t, err)
	var raw [32]byte
	_, err = rand.Read(raw[:])
	require.NoError(t, err)
	tok := oauth.AccessPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(tok))
	_, err = db.Exec(ctx, `INSERT INTO oauth_tokens (token_sha256, grant_id, refresh, expires_at) VALUES ($1, $2, false, now() + interval '1 hour')`,
		sum[:], grant)
	require.NoError(t, err)
	return tok, grant
}
