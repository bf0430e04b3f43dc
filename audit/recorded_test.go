package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// recorded_at is when the database took the event: moving it (to make an
// event look older or newer than it is) breaks the chain like any other
// edit.
func TestVerifyDetectsAnEditedRecordedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.Tx(t)
	for i := range 5 {
		appendOne(ctx, t, db, i)
	}
	_, err := audit.Verify(ctx, db)
	require.NoError(t, err)
	// A superuser's session can skip the append-only trigger (without
	// the table lock ALTER TABLE would take from the tests beside this).
	_, err = db.Exec(ctx, `SET LOCAL session_replication_role = replica;
		UPDATE audit_events SET recorded_at = recorded_at - interval '1 microsecond' WHERE seq = 4;
		SET LOCAL session_replication_role = origin`)
	require.NoError(t, err)
	_, err = audit.Verify(ctx, db)
	var broken *audit.BrokenError
	require.ErrorAs(t, err, &broken)
	require.EqualValues(t, 4, broken.Seq)
}

// A chain written before hash version 2 (its rows hash the event alone)
// still verifies after the migration, and goes on with rows that cover
// recorded_at; neither version can pass for the other.
func TestVerifyReadsAChainFromBeforeRecordedAtWasHashed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.EmptyURL(t)
	sqlDB, err := migrations.Open(url)
	require.NoError(t, err)
	defer sqlDB.Close()
	p, err := migrations.NewProvider(sqlDB, nil)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 12)
	require.NoError(t, err)
	pool := storetest.PoolFor(t, url)
	// Appends as they were before version 2.
	for i := range 3 {
		canon, err := jsondoc.Canonical([]byte(fmt.Sprintf(`{"type":"invoice.updated","via":"rest","subject_type":"invoice","subject_id":"%d","occurred_at":"2026-01-0%dT00:00:00Z"}`, i, i+1)))
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `
			WITH head AS (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1)
			INSERT INTO audit_events (seq, event, prev_hash, hash)
			SELECT coalesce((SELECT seq FROM head), 0) + 1, $1::jsonb,
			       coalesce((SELECT hash FROM head), $2),
			       sha256(coalesce((SELECT hash FROM head), $2) || $3::bytea)`, canon, make([]byte, 32), canon)
		require.NoError(t, err)
	}
	_, err = p.Up(ctx)
	require.NoError(t, err)
	n, err := audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	for i := range 3 {
		appendOne(ctx, t, pool, 10+i)
	}
	n, err = audit.Verify(ctx, pool)
	require.NoError(t, err, "old and new rows in one chain")
	require.EqualValues(t, 6, n)
	rows, err := pool.Query(ctx, `SELECT hash_version FROM audit_events ORDER BY seq`)
	require.NoError(t, err)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int16])
	require.NoError(t, err)
	require.Equal(t, []int16{1, 1, 1, 2, 2, 2}, versions)

	// Labelling a new row as old (to drop recorded_at from its hash) or
	// an old one as new breaks the chain there.
	for _, tc := range []struct {
		seq     int64
		version int16
	}{{5, 1}, {2, 2}} {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SET LOCAL session_replication_role = replica`)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `UPDATE audit_events SET hash_version = $2 WHERE seq = $1`, tc.seq, tc.version)
		require.NoError(t, err)
		_, err = audit.Verify(ctx, tx)
		var broken *audit.BrokenError
		require.ErrorAs(t, err, &broken)
		require.Equal(t, tc.seq, broken.Seq)
		require.NoError(t, tx.Rollback(ctx))
	}
}
