package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestAllowancesCLI lists, shows and revokes an allowance as the API
// does, refusing a clerk, an unknown id and a second revoke.
func TestAllowancesCLI(t *testing.T) {
	t.Parallel()
	b := setupApprovals(t)
	aid := b.request(t, b.clerk, "grant-allowance", uuid.NewString())
	id := uuid.New()
	err := store.WithTx(b.ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE approval_requests SET status = 'consumed', consumed_at = now(), consumed_by = $2 WHERE id = $1`, aid, uuid.New())
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO allowances (id, kind, currency, max_total, max_count, remaining_total, remaining_count,
			valid_until, reason, requested_by, approval_id, deciders, created_at)
			VALUES ($1, 'issue', 'EUR', 500000, 20, 380000, 19, $2, 'the monthly run', $3, $4, ARRAY[$5::uuid], now())`,
			id, time.Now().Add(24*time.Hour), b.clerk.UserID, aid, b.bob.UserID)
		return err
	})
	require.NoError(t, err)

	r := invoke(b.ctx, b.env, "allowances", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, id.String())
	require.Contains(t, r.stdout, "active")
	require.Contains(t, r.stdout, "3,800.00 EUR of 5,000.00 EUR")
	require.Contains(t, r.stdout, "19 of 20")

	r = invoke(b.ctx, b.env, "allowances", "show", id.String())
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "issue (issue-invoice)")
	require.Contains(t, r.stdout, "every customer")
	require.Contains(t, r.stdout, "the monthly run")

	for name, args := range map[string][]string{
		"clerk":   {"allowances", "revoke", id.String(), "--as", "clara"},
		"no --as": {"allowances", "revoke", id.String()},
		"bad id":  {"allowances", "revoke", "nope", "--as", "bob"},
		"unknown": {"allowances", "show", uuid.NewString()},
	} {
		r := invoke(b.ctx, b.env, args...)
		require.NotEqual(t, 0, r.code, name)
	}
	r = invoke(b.ctx, b.env, "allowances", "revoke", id.String(), "--as", "carol", "--reason", "run done")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "is revoked (3,800.00 EUR and 19 call(s) were left)")
	r = invoke(b.ctx, b.env, "allowances", "revoke", id.String(), "--as", "bob")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "revoked already")
	var events int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_events WHERE type = 'allowance.revoked' AND subject_id = $1`, id.String()).Scan(&events))
	require.Equal(t, 1, events)
}
