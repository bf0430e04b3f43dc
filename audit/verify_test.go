package audit_test

import (
	"context"
	"testing"

	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// A superuser who can switch the append-only trigger off removes the
// newest events. No chain can show that by itself; a head recorded
// earlier (what audit verify prints) does, and so does a rewritten past.
func TestVerifyAnchoredDetectsRemovedNewestEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.Tx(t)
	for i := range 5 {
		appendOne(ctx, t, db, i)
	}
	anchor, err := audit.VerifyAnchored(ctx, db, &audit.Head{Seq: 1, Hash: headHash(ctx, t, db, 1)})
	require.NoError(t, err)
	require.EqualValues(t, 5, anchor.Seq)
	parsed, err := audit.ParseHead(anchor.String())
	require.NoError(t, err)
	require.Equal(t, anchor, parsed)

	appendOne(ctx, t, db, 5)
	later, err := audit.VerifyAnchored(ctx, db, &anchor)
	require.NoError(t, err, "a chain that grew past its anchor is intact")
	require.EqualValues(t, 6, later.Seq)

	_, err = db.Exec(ctx, `SET LOCAL session_replication_role = replica;
		DELETE FROM audit_events WHERE seq >= 4;
		SET LOCAL session_replication_role = origin`)
	require.NoError(t, err)
	n, err := audit.Verify(ctx, db)
	require.NoError(t, err, "without an anchor the shortened chain looks whole")
	require.EqualValues(t, 3, n)
	_, err = audit.VerifyAnchored(ctx, db, &anchor)
	var broken *audit.BrokenError
	require.ErrorAs(t, err, &broken)
	require.Contains(t, broken.Reason, "events were removed")

	_, err = audit.VerifyAnchored(ctx, db, &audit.Head{Seq: 2, Hash: headHash(ctx, t, db, 3)})
	require.ErrorAs(t, err, &broken, "an anchor whose hash the chain does not hold")
	require.EqualValues(t, 2, broken.Seq)

	for _, bad := range []string{"", "3", "x:00", "3:zz", "0:" + anchor.String()[2:], "3:abcd"} {
		_, err := audit.ParseHead(bad)
		require.Error(t, err, bad)
	}
}

func headHash(ctx context.Context, t *testing.T, db store.Executor, seq int64) []byte {
	t.Helper()
	var h []byte
	require.NoError(t, db.QueryRow(ctx, `SELECT hash FROM audit_events WHERE seq = $1`, seq).Scan(&h))
	return h
}

// The hash covers the canonical form, whose numbers are doubles: an edit
// below double precision would leave every hash valid while the stored
// event says something else, so Verify refuses a stored number that is not
// exactly what was hashed.
func TestVerifyDetectsAnEditBelowDoublePrecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.Tx(t)
	for i := range 5 {
		appendOne(ctx, t, db, i)
	}
	require.NoError(t, store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		_, err := audit.AppendTx(ctx, tx, audit.Event{Type: "x", Via: "rest", SubjectType: "t", SubjectID: "f",
			Data: map[string]any{"fraction": 0.1, "big": 1e21, "amount": 9007199254740991}})
		return err
	}))
	n, err := audit.Verify(ctx, db)
	require.NoError(t, err, "numbers as appended verify")
	require.EqualValues(t, 6, n)

	_, err = db.Exec(ctx, `SET LOCAL session_replication_role = replica;
		UPDATE audit_events SET event = jsonb_set(event, '{data,n}', '3.00000000000000000001') WHERE seq = 4;
		SET LOCAL session_replication_role = origin`)
	require.NoError(t, err)
	_, err = audit.Verify(ctx, db)
	var broken *audit.BrokenError
	require.ErrorAs(t, err, &broken)
	require.EqualValues(t, 4, broken.Seq)
}
