package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The compose healthcheck: 1 while nothing serves, 0 once serve is ready.
func TestHealthcheckSaysWhetherTheLocalServerIsReady(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := env{"DATABASE_URL": storetest.URL(t), "INVOICED_ADDR": addr}
	r := invoke(context.Background(), e, "healthcheck")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "not ready")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- invoke(ctx, e, "serve") }()
	defer func() {
		cancel()
		<-done
	}()
	require.Eventually(t, func() bool {
		return invoke(context.Background(), e, "healthcheck").code == 0
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, "ready\n", invoke(context.Background(), e, "healthcheck").stdout)
}

// A replica whose database stops taking writes (a standby after a
// failover; here the database's default_transaction_read_only) leaves
// rotation: /readyz answers 503 naming why, and 200 once writes are back.
func TestReadyzIsUnavailableWhileTheDatabaseIsReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.URL(t)
	addr := freeAddr(t)
	e := env{"DATABASE_URL": dbURL, "INVOICED_ADDR": addr, "INVOICED_LOG_LEVEL": "error"}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan result, 1)
	go func() { done <- invoke(sctx, e, "serve") }()
	defer func() {
		cancel()
		<-done
	}()
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool { s, _ := readyz(); return s == http.StatusOK }, 30*time.Second, 50*time.Millisecond)

	// One connection, not a pool: the terminations below spare only the
	// session that asks for them.
	admin, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	var name string
	require.NoError(t, admin.QueryRow(ctx, `SELECT current_database()`).Scan(&name))
	// A setting of the database applies to sessions that start after it:
	// end the server's, and its pool connects anew.
	setReadOnly := func(on bool) {
		_, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s SET default_transaction_read_only = %t`, pgx.Identifier{name}.Sanitize(), on))
		require.NoError(t, err)
		_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name)
		require.NoError(t, err)
	}
	setReadOnly(true)
	require.Eventually(t, func() bool {
		s, body := readyz()
		return s == http.StatusServiceUnavailable && strings.Contains(body, "not ready: the database is read-only")
	}, 30*time.Second, 50*time.Millisecond)
	setReadOnly(false)
	require.Eventually(t, func() bool { s, _ := readyz(); return s == http.StatusOK }, 30*time.Second, 50*time.Millisecond)
}
