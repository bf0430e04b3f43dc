package migrations_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3/lock"
	"github.com/stretchr/testify/require"
)

// Redo waits for a migrator that holds the lock, then rolls back and
// re-applies the latest migration while holding it itself: a migrator
// that starts meanwhile waits for both steps.
func TestRedoHoldsTheMigrationLockForBothSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	latest, err := b.p.GetDBVersion(ctx)
	require.NoError(t, err)

	other, err := pgx.Connect(ctx, b.url)
	require.NoError(t, err)
	defer other.Close(ctx)
	_, err = other.Exec(ctx, "SELECT pg_advisory_lock($1)", lock.DefaultLockID)
	require.NoError(t, err)

	type result struct {
		down, up int64
		err      error
	}
	done := make(chan result, 1)
	go func() {
		down, up, err := migrations.Redo(ctx, b.db)
		r := result{err: err}
		if down != nil && up != nil {
			r.down, r.up = down.Source.Version, up.Source.Version
		}
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("redo ran while another migrator held the lock: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	// Redo is waiting for the lock: its session shows in pg_locks.
	var waiting bool
	require.NoError(t, other.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		               WHERE l.locktype = 'advisory' AND NOT l.granted
		                 AND d.datname = current_database() AND l.objid = $1::bigint::oid)`,
		lock.DefaultLockID).Scan(&waiting))
	require.True(t, waiting)

	_, err = other.Exec(ctx, "SELECT pg_advisory_unlock($1)", lock.DefaultLockID)
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, latest, r.down)
	require.Equal(t, latest, r.up)
	v, err := b.p.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, latest, v)
	var held bool
	require.NoError(t, other.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lock.DefaultLockID).Scan(&held))
	require.True(t, held, "redo let the lock go when it finished")
}

// Redo leaves nothing of its lock's session in the caller's pool: neither
// the lock nor the timeouts it set for its wait.
func TestRedoLeavesNoSessionSettingsInThePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := migrations.Open(storetest.URL(t))
	require.NoError(t, err)
	defer db.Close()
	_, _, err = migrations.Redo(ctx, db)
	require.NoError(t, err)

	n := db.Stats().Idle
	require.Positive(t, n)
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
		var lt string
		require.NoError(t, c.QueryRowContext(ctx, "SHOW lock_timeout").Scan(&lt))
		require.Equal(t, "0", lt, "pooled connection %d of %d kept Redo's lock_timeout", i+1, n)
	}
}
