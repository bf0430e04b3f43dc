package audit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// appendOne appends event i in a transaction of its own, a savepoint when
// db is the test's rolled-back transaction.
func appendOne(ctx context.Context, t *testing.T, db store.Executor, i int) {
	t.Helper()
	require.NoError(t, store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		_, err := audit.AppendTx(ctx, tx, audit.Event{
			Type: "invoice.updated", ActorID: "u1", Actor: "alice", Via: "rest",
			SubjectType: "invoice", SubjectID: fmt.Sprint(i), Data: map[string]any{"n": i, "memo": "ü"},
		})
		return err
	}))
}

func TestConcurrentAppendsKeepOneChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				appendOne(ctx, t, pool, g*100+i)
			}
		}()
	}
	wg.Wait()
	n, err := audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.EqualValues(t, 160, n)
}

func TestRolledBackAppendLeavesNoGap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.Tx(t)
	appendOne(ctx, t, db, 1)
	err := store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := audit.AppendTx(ctx, tx, audit.Event{Type: "x", Via: "rest", SubjectType: "invoice", SubjectID: "2"}); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	require.Error(t, err)
	appendOne(ctx, t, db, 3)
	n, err := audit.Verify(ctx, db)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
}

func TestAuditIsAppendOnlyAndTamperingIsDetected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: TRUNCATE takes the table's lock before the
	// trigger refuses it, and in the shared database it would wait for the
	// tests beside it while they wait for this one's append lock.
	db, err := storetest.Pool(t).Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Rollback(context.Background()) })
	for i := range 5 {
		appendOne(ctx, t, db, i)
	}
	require.ErrorContains(t, execRefused(ctx, t, db, `UPDATE audit_events SET event = jsonb_set(event, '{data,n}', '99') WHERE seq = 3`), "append-only")
	require.ErrorContains(t, execRefused(ctx, t, db, `DELETE FROM audit_events WHERE seq = 3`), "append-only")
	require.ErrorContains(t, execRefused(ctx, t, db, `TRUNCATE audit_events`), "append-only")

	// A superuser's session can skip the trigger; the chain still tells.
	_, err = db.Exec(ctx, `SET LOCAL session_replication_role = replica;
		UPDATE audit_events SET event = jsonb_set(event, '{data,n}', '99') WHERE seq = 3;
		SET LOCAL session_replication_role = origin`)
	require.NoError(t, err)
	_, err = audit.Verify(ctx, db)
	var broken *audit.BrokenError
	require.ErrorAs(t, err, &broken)
	require.EqualValues(t, 3, broken.Seq)
}

// execRefused runs a statement the database must refuse in a savepoint of
// db, so that db goes on, and returns the refusal.
func execRefused(ctx context.Context, t *testing.T, db pgx.Tx, sql string) error {
	t.Helper()
	sp, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, sp.Rollback(ctx)) }()
	_, err = sp.Exec(ctx, sql)
	return err
}
