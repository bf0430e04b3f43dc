package migrations_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// Migration 00042 rewrites the conversation id's CHECK for speed; the
// rule is the one the chat route enforces (steploop's idRE) on either
// side of it: 1–128 of A–Z, a–z, 0–9, '_' and '-'.
func TestConversationIDRuleIsTheSameBothSidesOf00042(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	pool := storetest.PoolFor(t, b.url)
	owner, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: "ann", Role: identity.RoleClerk})
	require.NoError(t, err)

	ids := []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"0QGw_Zk-9", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"a b", false},
		{"a/b", false},
		{"a\nb", false},
		{"abc\n", false},
		{"é", false},
		{"a.b", false},
	}
	check := func(version string) {
		t.Helper()
		for _, c := range ids {
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, `INSERT INTO conversations (id, owner_id) VALUES ($1, $2)`, c.id, owner.ID)
			require.NoError(t, tx.Rollback(ctx))
			if c.ok {
				require.NoError(t, err, "%s: %q", version, c.id)
				continue
			}
			var pgErr *pgconn.PgError
			require.True(t, errors.As(err, &pgErr), "%s: %q: %v", version, c.id, err)
			require.Equal(t, "conversations_id_format", pgErr.ConstraintName, "%s: %q", version, c.id)
		}
	}
	check("at the latest migration")
	_, err = b.p.DownTo(ctx, 41)
	require.NoError(t, err)
	check("below 00042")
	_, err = pool.Exec(ctx, `INSERT INTO conversations (id, owner_id) VALUES ('kept_1', $1)`, owner.ID)
	require.NoError(t, err)
	_, err = b.p.Up(ctx)
	require.NoError(t, err)
	check("up again")
	var valid bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT convalidated FROM pg_constraint WHERE conname = 'conversations_id_format'`).Scan(&valid))
	require.True(t, valid, "the rows there were are validated against the rule")
	var kept int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM conversations WHERE id = 'kept_1'`).Scan(&kept))
	require.Equal(t, 1, kept)
}
