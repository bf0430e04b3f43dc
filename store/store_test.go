package store_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestWithTxCommitsAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	_, err := pool.Exec(ctx, "CREATE TABLE t (v int)")
	require.NoError(t, err)

	require.NoError(t, store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO t VALUES (1)")
		return err
	}))
	boom := errors.New("boom")
	err = store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO t VALUES (2)")
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Panics(t, func() {
		_ = store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
			_, _ = tx.Exec(ctx, "INSERT INTO t VALUES (3)")
			panic("handler bug")
		})
	})
	var sum int
	require.NoError(t, pool.QueryRow(ctx, "SELECT coalesce(sum(v),0) FROM t").Scan(&sum))
	require.Equal(t, 1, sum, "only the committed insert remains")
	require.Equal(t, int32(0), pool.Stat().AcquiredConns(), "no connection leaked by panic or error")
}

func TestWithTxResultReturnsTheCommittedValueOrNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	_, err := pool.Exec(ctx, "CREATE TABLE r (v int)")
	require.NoError(t, err)

	v, err := store.WithTxResult(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		var v int
		return v, tx.QueryRow(ctx, "INSERT INTO r VALUES (7) RETURNING v").Scan(&v)
	})
	require.NoError(t, err)
	require.Equal(t, 7, v)

	boom := errors.New("boom")
	v, err = store.WithTxResult(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		_, err := tx.Exec(ctx, "INSERT INTO r VALUES (8)")
		require.NoError(t, err)
		return 8, boom
	})
	require.ErrorIs(t, err, boom)
	require.Zero(t, v, "a rolled-back attempt's value is not returned")
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM r").Scan(&n))
	require.Equal(t, 1, n)
}

func TestWithTxRetriesSerializationFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	_, err := pool.Exec(ctx, "CREATE TABLE c (id int PRIMARY KEY, n int); INSERT INTO c VALUES (1, 0)")
	require.NoError(t, err)

	// 16 serializable read-modify-write transactions on one row: without
	// retries most would fail with 40001; with them every increment lands.
	const workers = 16
	var attempts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
				attempts.Add(1)
				if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"); err != nil {
					return err
				}
				var n int
				if err := tx.QueryRow(ctx, "SELECT n FROM c WHERE id = 1").Scan(&n); err != nil {
					return err
				}
				time.Sleep(2 * time.Millisecond)
				_, err := tx.Exec(ctx, "UPDATE c SET n = $1 WHERE id = 1", n+1)
				return err
			})
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
		}
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT n FROM c WHERE id = 1").Scan(&n))
	require.Equal(t, ok, n, "every committed transaction incremented once")
	require.Greater(t, attempts.Load(), int64(workers), "conflicts were retried")
	require.GreaterOrEqual(t, ok, 1)
}

func TestMapError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := storetest.Tx(t)

	var id string
	err := store.MapError(tx.QueryRow(ctx, "SELECT id::text FROM users WHERE id = $1", "00000000-0000-0000-0000-000000000000").Scan(&id), "user")
	pe, ok := problem.As(err)
	require.True(t, ok)
	require.Equal(t, problem.CodeNotFound, pe.Code)

	err = store.MapError(tx.QueryRow(ctx, "SELECT id::text FROM users WHERE id = $1::text::uuid", "not-a-uuid").Scan(&id), "user")
	require.True(t, problem.HasCode(err, problem.CodeNotFound), "a malformed id is a 404, not a 500: %v", err)
}

func TestMapErrorRefusesTextPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var s string
	for name, q := range map[string]string{
		"NUL in text":  "SELECT $1::text",
		"NUL in jsonb": "SELECT ($1::text)::jsonb::text",
	} {
		arg := "a\x00b"
		if name == "NUL in jsonb" {
			arg = `{"a":"\u0000"}`
		}
		tx := storetest.Tx(t)
		err := store.MapError(tx.QueryRow(ctx, q, arg).Scan(&s), "memo")
		pe, ok := problem.As(err)
		require.True(t, ok, "%s: %v", name, err)
		require.Equal(t, 422, pe.Status, name)
		require.Equal(t, "memo", pe.Errors[0].Field, name)
	}
}

func TestWithTxCommitAndCommitsThenReturnsTheError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	_, err := pool.Exec(ctx, "CREATE TABLE r (v int)")
	require.NoError(t, err)
	refusal := problem.Forbidden("recorded, then refused")
	err = store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO r VALUES (7)")
		require.NoError(t, err)
		return store.CommitAnd(refusal)
	})
	require.Same(t, refusal, err, "the caller gets the refusal itself")
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM r").Scan(&n))
	require.Equal(t, 1, n, "the record was committed")
}

func TestOpenSizesThePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	pool, err := store.Open(ctx, store.PoolConfig{URL: url})
	require.NoError(t, err)
	defer pool.Close()
	require.Equal(t, store.DefaultMaxConns(), pool.Config().MaxConns)
	require.GreaterOrEqual(t, pool.Config().MaxConns, int32(8))

	pool2, err := store.Open(ctx, store.PoolConfig{URL: url, MaxConns: 3})
	require.NoError(t, err)
	defer pool2.Close()
	require.Equal(t, int32(3), pool2.Config().MaxConns)

	// A URL that sizes the pool itself is obeyed, not silently overridden.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	pool3, err := store.Open(ctx, store.PoolConfig{URL: url + sep + "pool_max_conns=5"})
	require.NoError(t, err)
	defer pool3.Close()
	require.Equal(t, int32(5), pool3.Config().MaxConns)

	_, err = store.Open(ctx, store.PoolConfig{URL: "postgres://nobody@127.0.0.1:1/x?connect_timeout=1"})
	require.Error(t, err, "a bad database URL fails at start, not at the first request")
}

func TestURLSetsMaxConns(t *testing.T) {
	t.Parallel()
	for conn, want := range map[string]bool{
		"postgres://u@h/db?pool_max_conns=4":                 true,
		"postgres://u@h/db?sslmode=disable&pool_max_conns=4": true,
		"postgres://u@h/db?sslmode=disable":                  false,
		"host=h dbname=db pool_max_conns=4":                  true,
		"host=h dbname=db":                                   false,
		"":                                                   false,
	} {
		require.Equal(t, want, store.URLSetsMaxConns(conn), conn)
	}
}

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
