package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.ConnectError{}, true},
		{fmt.Errorf("begin: %w", &pgconn.PgError{Code: "57P01"}), true},
		{&pgconn.PgError{Code: "57P02"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{fmt.Errorf("commit: %w", &pgconn.PgError{Code: "25006"}), true}, // read-only: a standby
		{fmt.Errorf("token: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("query: %w", pgconn.ErrConnClosed), true},
		{&net.OpError{Op: "write", Net: "unix", Err: syscall.EPIPE}, true},
		{nil, false},
		{errors.New("something else"), false},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "57014"}, false}, // a cancelled statement
		{context.Canceled, false},
		{&url.Error{Op: "Post", URL: "https://model.example/v1", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, false},
		{fmt.Errorf("%w: %w", context.DeadlineExceeded, &net.OpError{Op: "read", Err: syscall.ETIMEDOUT}), false},
	} {
		require.Equal(t, tc.want, store.IsUnavailable(tc.err), "%#v", tc.err)
	}
}

// What pgx returns, for real, while a database goes away and comes back:
// each failure is unavailable (503 through MapError), and the same pool
// serves again once the server is back.
func TestUnavailableWhileTheServerIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := storetest.NewCluster(t)
	cfg, err := pgxpool.ParseConfig(c.URL)
	require.NoError(t, err)
	cfg.MaxConns = 2
	// No liveness ping on acquire: the stale connection itself is used.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()
	requireUnavailable := func(what string, err error) {
		t.Helper()
		require.True(t, store.IsUnavailable(err), "%s: %v", what, err)
		p, ok := problem.As(store.MapError(err, "thing"))
		require.True(t, ok, what)
		require.Equal(t, http.StatusServiceUnavailable, p.Status, what)
		require.Equal(t, problem.CodeUnavailable, p.Code, what)
		require.Equal(t, store.RetryUnavailable, p.RetryAfter, what)
		require.NotContains(t, p.Detail, err.Error(), what)
	}

	_, err = pool.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	c.Stop(t)
	_, err = pool.Exec(ctx, "SELECT 1")
	requireUnavailable("a pooled connection the shutdown ended", err)
	_, err = pool.Exec(ctx, "SELECT 1")
	requireUnavailable("a new connection refused", err)
	var ce *pgconn.ConnectError
	require.ErrorAs(t, err, &ce)

	c.Start(t)
	_, err = pool.Exec(ctx, "SELECT 1")
	require.NoError(t, err, "the pool reconnects by itself")

	// A crash under a statement in flight.
	running := make(chan error, 1)
	go func() {
		_, err := pool.Exec(ctx, "SELECT pg_sleep(60)")
		running <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(60)'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "the statement runs on the server")
	c.Crash(t)
	requireUnavailable("a statement whose connection was lost", <-running)

	// The other pooled connection died with the server too: with no ping
	// to find out first, using it fails once (unavailable) and drops it;
	// then the pool reconnects, within MaxConns + 1 attempts.
	c.Start(t)
	for attempt := 1; ; attempt++ {
		_, err = pool.Exec(ctx, "SELECT 1")
		if err == nil {
			break
		}
		requireUnavailable("a connection the crash ended", err)
		require.Less(t, attempt, int(cfg.MaxConns)+1, "the pool reconnects after a crash too")
	}
}

// A database host that accepts connections and never answers (or drops
// packets) fails a connection attempt after DefaultConnectTimeout, or the
// URL's connect_timeout, as unavailable: requests do not hang for the
// kernel's TCP retries.
func TestOpenGivesUpOnASilentServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never answered
		}
	}()
	_, err = store.Open(ctx, store.PoolConfig{URL: "postgres://nobody@" + l.Addr().String() + "/x?sslmode=disable&connect_timeout=1"})
	require.Error(t, err)
	require.True(t, store.IsUnavailable(err), "%v", err)

	pool, err := store.Open(ctx, store.PoolConfig{URL: storetest.URL(t)})
	require.NoError(t, err)
	defer pool.Close()
	require.Equal(t, store.DefaultConnectTimeout, pool.Config().ConnConfig.ConnectTimeout, "bounded when the URL says nothing")
}
