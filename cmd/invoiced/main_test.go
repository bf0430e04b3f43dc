package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

type result struct {
	code           int
	stdout, stderr string
}

func invoke(ctx context.Context, e env, args ...string) result {
	return invokeWithInput(ctx, e, "", args...)
}

func invokeWithInput(ctx context.Context, e env, stdin string, args ...string) result {
	var out, errb bytes.Buffer
	code := run(ctx, args, e, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func migrationCount(t *testing.T) int {
	t.Helper()
	entries, err := fs.Glob(migrations.FS(), "*.sql")
	require.NoError(t, err)
	return len(entries)
}

func tableCount(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'goose_db_version'`).Scan(&n))
	return n
}

func TestServeRefusesABehindSchemaNamingTheFix(t *testing.T) {
	t.Parallel()
	e := env{"DATABASE_URL": storetest.EmptyURL(t), "INVOICED_ADDR": "127.0.0.1:0"}
	r := invoke(context.Background(), e, "serve")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "invoiced migrate up")
	require.Zero(t, tableCount(t, e["DATABASE_URL"]), "serve without --migrate changed nothing")
}

func TestMigrateUpStatusDownToZeroAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := env{"DATABASE_URL": storetest.EmptyURL(t)}
	n := migrationCount(t)

	r := invoke(ctx, e, "migrate", "up")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, n, strings.Count(r.stdout, "applied "))
	tables := tableCount(t, e["DATABASE_URL"])
	require.Positive(t, tables)

	r = invoke(ctx, e, "migrate", "status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, n, strings.Count(r.stdout, " applied "), r.stdout)
	require.NotContains(t, r.stdout, "pending")
	rivers, err := migrations.RiverFiles()
	require.NoError(t, err)
	require.Contains(t, r.stdout, fmt.Sprintf("river schema: version %d of %d", len(rivers), len(rivers)))

	for i := range n {
		r = invoke(ctx, e, "migrate", "down", "--yes")
		require.Equal(t, 0, r.code, "down #%d: %s", i+1, r.stderr)
	}
	r = invoke(ctx, e, "migrate", "version")
	require.Equal(t, "0\n", r.stdout)
	require.Zero(t, tableCount(t, e["DATABASE_URL"]), "every down removes what its up made")

	r = invoke(ctx, e, "migrate", "up")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, tables, tableCount(t, e["DATABASE_URL"]))
	r = invoke(ctx, e, "migrate", "redo", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	r = invoke(ctx, e, "migrate", "version")
	require.Equal(t, fmt.Sprintf("%d\n", latestVersion(t)), r.stdout)
}

func latestVersion(t *testing.T) int64 {
	t.Helper()
	db, err := migrations.Open("")
	require.NoError(t, err)
	defer db.Close()
	p, err := migrations.NewProvider(db, nil)
	require.NoError(t, err)
	srcs := p.ListSources()
	return srcs[len(srcs)-1].Version
}

func TestTwoConcurrentMigrateUpsApplyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.EmptyURL(t)
	e := env{"DATABASE_URL": url}
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = invoke(ctx, e, "migrate", "up") }()
	}
	wg.Wait()
	for _, r := range results {
		require.Equal(t, 0, r.code, r.stderr)
	}
	require.Equal(t, migrationCount(t), strings.Count(results[0].stdout+results[1].stdout, "applied "),
		"each migration applied by exactly one of the two")
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var dups int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT version_id FROM goose_db_version GROUP BY version_id HAVING count(*) > 1) d`).Scan(&dups))
	require.Zero(t, dups)
}

func TestUsersCreatePrintsTheTokenAloneOnTheLastLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := env{"DATABASE_URL": storetest.URL(t)}
	r := invoke(ctx, e, "users", "create", "--username", "olga", "--role", "approver")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	token := lines[len(lines)-1]
	require.Regexp(t, `^inv_[A-Za-z0-9_-]{43}$`, token)

	r = invoke(ctx, e, "users", "create", "--username", "olga", "--role", "clerk")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "taken")
	r = invoke(ctx, e, "users", "create", "--username", "x", "--role", "boss")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "role")
	r = invoke(ctx, e, "users", "create", "--username", "x")
	require.Equal(t, 2, r.code, "missing --role is a usage error")

	r = invoke(ctx, e, "tokens", "create", "--username", "olga")
	require.Equal(t, 0, r.code, r.stderr)
	lines = strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.NotEqual(t, token, lines[len(lines)-1])
	r = invoke(ctx, e, "tokens", "create", "--username", "nobody")
	require.Equal(t, 1, r.code)
}

func TestHelpOnEverySubcommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"migrate", "--help"}, {"users", "create", "--help"}, {"tokens", "create", "--help"}, {"version", "--help"}} {
		r := invoke(ctx, env{}, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stdout+r.stderr, "%v says what it does", args)
	}
	r := invoke(ctx, env{}, "version")
	require.Contains(t, r.stdout, "invoiced")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestServeWithMigrateBecomesReadyAndShutsDownGracefully(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := env{"DATABASE_URL": storetest.EmptyURL(t), "INVOICED_ADDR": addr}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- invoke(ctx, e, "serve", "--migrate") }()

	var status int
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		status = resp.StatusCode
		return status == 200
	}, 30*time.Second, 50*time.Millisecond)

	cancel()
	select {
	case r := <-done:
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, `"msg":"stopped"`)
		require.Equal(t, migrationCount(t), strings.Count(r.stdout, `"msg":"migration applied"`), "each migration applied is logged")
		require.Contains(t, r.stdout, `"migration":"00001_identity.sql"`)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
}

func TestServeRefusesBadSettingsNamingThem(t *testing.T) {
	t.Parallel()
	for key, val := range map[string]string{
		"INVOICED_DB_MAX_CONNS":              "zero",
		"INVOICED_BODY_LIMIT":                "abc",
		"INVOICED_NUMBER_PREFIX":             "inv-",
		"INVOICED_APPROVAL_PENDING_TTL":      "3 days",
		"INVOICED_APPROVAL_QUORUM_THRESHOLD": "10000.00",
		"INVOICED_APPROVAL_QUORUM":           "0",
		"INVOICED_ADDR":                      "bogus",
		"INVOICED_MCP_ALLOWED_ORIGINS":       "https://app.example.com,*",
	} {
		r := invoke(context.Background(), env{key: val}, "serve")
		require.Equal(t, 1, r.code, key)
		require.Contains(t, r.stderr, key)
	}
	// The pool is sized in one place, not silently in whichever wins.
	r := invoke(context.Background(), env{"INVOICED_DB_MAX_CONNS": "4",
		"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/x?pool_max_conns=20"}, "serve")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "INVOICED_DB_MAX_CONNS and DATABASE_URL's pool_max_conns")
}

func TestUsersPasswdReadsStdinAndRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := env{"DATABASE_URL": storetest.URL(t)}
	require.Equal(t, 0, invoke(ctx, e, "users", "create", "--username", "pia", "--role", "approver").code)

	r := invokeWithInput(ctx, e, "correct horse battery staple\n", "users", "passwd", "pia")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout+r.stderr, "correct horse", "the password is never echoed")

	r = invokeWithInput(ctx, e, "short\n", "users", "passwd", "pia")
	require.Equal(t, 1, r.code)
	r = invokeWithInput(ctx, e, "correct horse battery staple\n", "users", "passwd", "nobody")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "not found")
	r = invokeWithInput(ctx, e, "", "users", "passwd")
	require.Equal(t, 2, r.code, "a missing NAME is a usage error")

	conn, err := pgx.Connect(ctx, e["DATABASE_URL"])
	require.NoError(t, err)
	defer conn.Close(ctx)
	var hash string
	require.NoError(t, conn.QueryRow(ctx, `SELECT password_hash FROM users WHERE username = 'pia'`).Scan(&hash))
	require.True(t, strings.HasPrefix(hash, "$argon2id$"), "stored as an argon2id hash, not the password")
}

func TestPprofListensOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	log := newLogger(env{}, io.Discard)
	_, err := servePprof("0.0.0.0:6060", log)
	require.ErrorContains(t, err, "loopback")
	_, err = servePprof("nonsense", log)
	require.ErrorContains(t, err, "host:port")

	stop, err := servePprof("127.0.0.1:0", log)
	require.NoError(t, err)
	stop()
}
