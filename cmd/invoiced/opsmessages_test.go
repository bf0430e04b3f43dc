package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// oneLine requires r to have failed with one line on standard error
// that holds each of want, and returns the line.
func oneLine(t *testing.T, r result, want ...string) string {
	t.Helper()
	require.Equal(t, 1, r.code, "stdout %s, stderr %s", r.stdout, r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
	for _, w := range want {
		require.Contains(t, r.stderr, w)
	}
	return r.stderr
}

// serving runs `invoiced serve` with e until the test ends and returns
// once it is ready; a serve that ends before is the test's failure, with
// what it said. stop ends it early and returns what it wrote.
func serving(t *testing.T, e env) (stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- invoke(ctx, e, "serve") }()
	var r *result
	stop = func() result {
		cancel()
		if r == nil {
			got := <-done
			r = &got
		}
		return *r
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case got := <-done:
			r = &got
			t.Fatalf("serve ended before it was ready (%d): %s%s", got.code, got.stdout, got.stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + e["INVOICED_ADDR"] + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop
			}
		}
		require.True(t, time.Now().Before(deadline), "serve not ready after 30 s")
	}
}

// Done when: a second serve on the address the first listens on names
// the address in its error, and the first keeps serving.
func TestASecondServeOnOneAddressNamesIt(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := env{"DATABASE_URL": storetest.URL(t), "INVOICED_ADDR": addr, "INVOICED_LOG_LEVEL": "error"}
	serving(t, e)

	r := invoke(context.Background(), e, "serve")
	oneLine(t, r, "invoiced: INVOICED_ADDR "+addr+" is in use by another process", "set INVOICED_ADDR to a free address")
	require.Equal(t, 0, invoke(context.Background(), e, "healthcheck").code, "the first still serves")

	// The side listeners say which setting holds a taken address.
	e2 := env{"DATABASE_URL": e["DATABASE_URL"], "INVOICED_ADDR": freeAddr(t), "INVOICED_METRICS_ADDR": addr}
	oneLine(t, invoke(context.Background(), e2, "serve"), "INVOICED_METRICS_ADDR "+addr+" is in use")
}

// Done when: with PostgreSQL unreachable, serve and the other commands
// say so in one sentence naming the host and the port.
func TestPostgresUnreachableIsOneSentenceNamingHostAndPort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, port, err := net.SplitHostPort(freeAddr(t)) // nothing listens there
	require.NoError(t, err)
	e := env{"DATABASE_URL": "postgres://postgres@127.0.0.1:" + port + "/x?connect_timeout=2", "INVOICED_ADDR": freeAddr(t)}
	want := fmt.Sprintf("invoiced: PostgreSQL at 127.0.0.1:%s is not reachable (connection refused): start it, or set DATABASE_URL to a server that is running\n", port)
	for _, args := range [][]string{{"serve"}, {"serve", "--migrate"}, {"migrate", "up"}, {"users", "list"}} {
		r := invoke(ctx, e, args...)
		require.Equal(t, 1, r.code, "%v", args)
		require.Equal(t, want, r.stderr, "%v", args)
	}
}

// An unknown role or database is named as such: starting PostgreSQL
// would not help.
func TestUnknownRoleOrDatabaseIsNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server, err := url.Parse(storetest.ServerURL(t))
	require.NoError(t, err)
	where := server.Host

	noRole := *server
	noRole.User = url.User("invoiced_no_such_role")
	noDB := storetest.WithDatabase(server.String(), "invoiced_no_such_db")
	for _, args := range [][]string{{"serve"}, {"users", "list"}} {
		r := invoke(ctx, env{"DATABASE_URL": noRole.String(), "INVOICED_ADDR": freeAddr(t)}, args...)
		line := oneLine(t, r, "PostgreSQL at "+where+` has no role "invoiced_no_such_role": create it`)
		require.NotContains(t, line, "start", "%v", args)

		r = invoke(ctx, env{"DATABASE_URL": noDB, "INVOICED_ADDR": freeAddr(t)}, args...)
		line = oneLine(t, r, "PostgreSQL at "+where+` has no database "invoiced_no_such_db": create it`)
		require.NotContains(t, line, "start", "%v", args)
	}
}

// A DATABASE_URL that cannot be read says what form it takes.
func TestUnreadableDatabaseURLSaysTheForm(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"postgres://x@[::1", "postgres://postgres@127.0.0.1/x?sslmode=sometimes", "mysql://x"} {
		for _, args := range [][]string{{"serve"}, {"migrate", "status"}, {"users", "list"}} {
			r := invoke(context.Background(), env{"DATABASE_URL": u, "INVOICED_ADDR": freeAddr(t)}, args...)
			oneLine(t, r, "invoiced: DATABASE_URL cannot be read (", "write it as a URL such as postgres://USER:PASSWORD@HOST:5432/DATABASE", "host=HOST port=5432")
		}
	}
	r := invoke(context.Background(), env{"DATABASE_URL": "postgres://me:s3cret@[::1"}, "users", "list")
	require.NotContains(t, r.stderr, "s3cret", "the password is never shown")
}

// healthcheck says why the server is not ready: nothing listening, or
// the reason /readyz gives.
func TestHealthcheckSaysWhyNotReady(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	oneLine(t, invoke(context.Background(), env{"INVOICED_ADDR": addr}, "healthcheck"),
		"invoiced: not ready: nothing answers http://"+addr+"/readyz (connection refused): is invoiced serve running there")

	dbURL := storetest.URL(t)
	e := env{"DATABASE_URL": dbURL, "INVOICED_ADDR": addr, "INVOICED_LOG_LEVEL": "error"}
	serving(t, e)
	pool := storetest.PoolFor(t, dbURL)
	_, err := pool.Exec(context.Background(), `DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)`)
	require.NoError(t, err)
	oneLine(t, invoke(context.Background(), e, "healthcheck"),
		"invoiced: not ready: http://"+addr+"/readyz answered 503: the database schema is behind this binary")
}

// version, as every command, takes --help.
func TestVersionHelp(t *testing.T) {
	t.Parallel()
	r := invoke(context.Background(), env{}, "version", "--help")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stderr, "Usage: invoiced version")
	require.Empty(t, r.stdout)
	r = invoke(context.Background(), env{}, "version", "extra")
	require.Equal(t, 2, r.code)
}

// migrate down and redo roll back what may be tables of rows: off a
// terminal they need --yes, and without it change nothing.
func TestMigrateRollbackNeedsYesOffATerminal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := env{"DATABASE_URL": storetest.URL(t)}
	latest := fmt.Sprintf("%d\n", latestVersion(t))
	for _, sub := range []string{"down", "redo"} {
		r := invoke(ctx, e, "migrate", sub)
		oneLine(t, r, "invoiced: migrate "+sub+" rolls back the latest migration", "add --yes to do it: invoiced migrate "+sub+" --yes")
		require.Equal(t, latest, invoke(ctx, e, "migrate", "version").stdout, "nothing rolled back")
	}
	r := invoke(ctx, e, "migrate", "redo", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, latest, invoke(ctx, e, "migrate", "version").stdout)
	r = invoke(ctx, e, "migrate", "--yes", "down")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotEqual(t, latest, invoke(ctx, e, "migrate", "version").stdout)
}

// On a terminal, migrate down names the migration and asks; anything but
// yes rolls nothing back. The terminal is a real one: util-linux's
// script runs the command on a pseudo-terminal.
func TestMigrateDownAsksOnATerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	require.NoError(t, err, "script (util-linux) runs the command on a terminal")
	ctx := context.Background()
	e := env{"DATABASE_URL": storetest.URL(t)}
	latest := latestVersion(t)
	onTerminal := func(answer string) string {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, "--quiet", "--return", "--command", os.Args[0]+" -test.run=^$", "/dev/null")
		cmd.Env = append(os.Environ(), childArgs+"=migrate down", "DATABASE_URL="+e["DATABASE_URL"])
		cmd.Stdin = strings.NewReader(answer + "\n")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	out := onTerminal("no")
	require.Contains(t, out, fmt.Sprintf("Roll back %05d_", latest))
	require.Contains(t, out, "Type yes to go on:")
	require.Contains(t, out, "nothing was rolled back")
	require.Equal(t, fmt.Sprintf("%d\n", latest), invoke(ctx, e, "migrate", "version").stdout)

	out = onTerminal("yes")
	require.Contains(t, out, "rolled back ")
	require.NotEqual(t, fmt.Sprintf("%d\n", latest), invoke(ctx, e, "migrate", "version").stdout)
}

// serve logs once at start what is off and why, in words.
func TestServeSaysWhatIsOff(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := env{"DATABASE_URL": storetest.URL(t), "INVOICED_ADDR": addr}
	r := serving(t, e)()
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, strings.Count(r.stdout, `"msg":"off: `), r.stdout)
	for _, words := range []string{
		"no model, so no chat", "INVOICED_MODEL_PROVIDER",
		"no SMTP server, so no mail", "INVOICED_SMTP_URL",
		"no seller, so no PDFs", "invoiced seller set",
		`"off":["chat","mail","documents","metrics"]`,
	} {
		require.Contains(t, r.stdout, words)
	}

	addr = freeAddr(t)
	e = env{"DATABASE_URL": e["DATABASE_URL"], "INVOICED_ADDR": addr, "INVOICED_SELLER_NAME": "Example Seller", "INVOICED_METRICS_ADDR": freeAddr(t)}
	r = serving(t, e)()
	require.Contains(t, r.stdout, `"off":["chat","mail"]`)
}
