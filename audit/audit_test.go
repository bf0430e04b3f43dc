package audit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func appendOne(ctx context.Context, t *testing.T, pool *pgxpool.Pool, i int) {
	t.Helper()
	require.NoError(t, store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
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
	pool := storetest.Pool(t)
	appendOne(ctx, t, pool, 1)
	err := store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := audit.AppendTx(ctx, tx, audit.Event{Type: "x", Via: "rest", SubjectType: "invoice", SubjectID: "2"}); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	require.Error(t, err)
	appendOne(ctx, t, pool, 3)
	n, err := audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
}

func TestAuditIsAppendOnlyAndTamperingIsDetected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	for i := range 5 {
		appendOne(ctx, t, pool, i)
	}
	_, err := pool.Exec(ctx, `UPDATE audit_events SET event = jsonb_set(event, '{data,n}', '99') WHERE seq = 3`)
	require.ErrorContains(t, err, "append-only")
	_, err = pool.Exec(ctx, `DELETE FROM audit_events WHERE seq = 3`)
	require.ErrorContains(t, err, "append-only")
	_, err = pool.Exec(ctx, `TRUNCATE audit_events`)
	require.ErrorContains(t, err, "append-only")

	// A superuser can switch the trigger off; the chain still tells.
	_, err = pool.Exec(ctx, `ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
		UPDATE audit_events SET event = jsonb_set(event, '{data,n}', '99') WHERE seq = 3;
		ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete`)
	require.NoError(t, err)
	_, err = audit.Verify(ctx, pool)
	var broken *audit.BrokenError
	require.ErrorAs(t, err, &broken)
	require.EqualValues(t, 3, broken.Seq)
}
