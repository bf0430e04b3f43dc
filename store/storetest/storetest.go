// Package storetest gives each test its own PostgreSQL database, cloned from
// a template that is migrated once, so tests run in parallel and may commit,
// LISTEN or lock without seeing each other; or, cheaper, a transaction on a
// database its test binary shares, rolled back at the end (Tx).
//
// The server comes from INVOICED_TEST_DATABASE_URL when it is set (a URL
// whose user may CREATE DATABASE); otherwise testcontainers-go starts one in
// Docker. Without either the test fails saying what to set: it never skips.
//
// Every URL it gives out names a proxy in the test binary (proxy.go), which
// holds the connections of all test processes on the machine to
// INVOICED_TEST_MAX_CONNS at once (bound.go) and waits out the server's
// "too many clients": the suite shares a server with other work.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"
)

// EnvURL names the variable that points tests at a PostgreSQL server.
const EnvURL = "INVOICED_TEST_DATABASE_URL"

// EnvTablespace optionally names a tablespace for the template and its
// clones. Cloning creates ~400 files; on disks where a file operation is
// slow, a tablespace in memory (scripts/test-tablespace.sh, which .ci/run
// uses) makes a clone ~10x cheaper.
const EnvTablespace = "INVOICED_TEST_TABLESPACE"

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error

	templateOnce sync.Once
	templateName string
	templateErr  error
)

// ServerURL returns the admin URL of the test server itself, starting a
// container when INVOICED_TEST_DATABASE_URL is unset. Connections to it
// bypass the bound of INVOICED_TEST_MAX_CONNS: use URL, EmptyURL and the
// pools for what a test runs.
func ServerURL(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			serverURL = u
			return
		}
		serverURL, serverErr = startContainer()
	})
	if serverErr != nil {
		t.Fatalf("storetest: no PostgreSQL for tests: set %s to a server URL whose user may CREATE DATABASE "+
			"(for example postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), "+
			"or run a Docker engine for testcontainers-go: %v", EnvURL, serverErr)
	}
	return serverURL
}

func startContainer() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := tcpostgres.Run(ctx, "postgres:15-alpine",
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		testcontainers.WithWaitStrategy(wait.ForLog("database system is ready to accept connections").WithOccurrence(2).WithStartupTimeout(time.Minute)),
	)
	if err != nil {
		return "", fmt.Errorf("testcontainers: %w", err)
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

// WithDatabase returns serverURL pointing at database name instead.
func WithDatabase(serverURL, name string) string {
	if strings.Contains(serverURL, "://") {
		u, err := url.Parse(serverURL)
		if err == nil {
			u.Path = "/" + name
			return u.String()
		}
	}
	return serverURL + " dbname=" + name
}

// migrationsHash names the template after the migrations it holds, so an
// edited migration gets a fresh template and unchanged ones are reused across
// test binaries (go test runs packages in parallel processes).
func migrationsHash() (string, error) {
	h := sha256.New()
	entries, err := fs.ReadDir(migrations.FS(), ".")
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS(), n)
		if err != nil {
			return "", err
		}
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func template(t testing.TB) string {
	t.Helper()
	admin := adminURL(t)
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(admin) })
	if templateErr != nil {
		t.Fatalf("storetest: template database: %v", templateErr)
	}
	return templateName
}

func ensureTemplate(admin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	tablespace := os.Getenv(EnvTablespace)
	if tablespace != "" {
		sum = fmt.Sprintf("%x", sha256.Sum256([]byte(sum+"@"+tablespace)))[:16]
	}
	name := "invoiced_tmpl_" + sum
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", EnvURL, err)
	}
	defer conn.Close(ctx)
	// One builder at a time across test processes; the others wait here and
	// then find the finished template.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('invoiced.storetest.template'))"); err != nil {
		return "", err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext('invoiced.storetest.template'))") //nolint:errcheck
	sweepStale(ctx, conn, name)
	var ready bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	if err == nil && ready {
		return name, markUsed(ctx, conn, name)
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", err
	}
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if tablespace != "" {
		// Clones inherit the template's tablespace.
		create += " TABLESPACE " + pgx.Identifier{tablespace}.Sanitize()
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		return "", fmt.Errorf("create template (%s=%q): %w", EnvTablespace, tablespace, err)
	}
	db, err := migrations.Open(WithDatabase(admin, name))
	if err != nil {
		return "", err
	}
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		db.Close()
		return "", err
	}
	_, err = p.Up(ctx)
	db.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return "", err
	}
	return name, markUsed(ctx, conn, name)
}

// templateUsedPrefix starts the comment on a template database that says
// when a test binary last used it.
const templateUsedPrefix = "invoiced storetest template, last used at unix "

// markUsed records that a test binary uses template name now, so a test
// run of another checkout (other migrations, another template) does not
// sweep it while it is in use.
func markUsed(ctx context.Context, conn *pgx.Conn, name string) error {
	// COMMENT takes no parameters; the literal is fixed text and digits.
	_, err := conn.Exec(ctx, "COMMENT ON DATABASE "+pgx.Identifier{name}.Sanitize()+
		" IS '"+templateUsedPrefix+strconv.FormatInt(time.Now().Unix(), 10)+"'")
	return err
}

// staleAfter is how old a leftover test database must be before a new test
// binary drops it: 6 hours, far longer than any test run.
const staleAfter = 6 * time.Hour

// sweepStale drops test databases older than staleAfter and templates of
// other migration sets that no test binary used for staleAfter: a template
// is rebuilt whenever a migration changes, and without this every edit
// would leave one behind, while a template used within hours may belong
// to a test run of another checkout that is running right now.
func sweepStale(ctx context.Context, conn *pgx.Conn, keepTemplate string) {
	if rows, err := conn.Query(ctx, `
		SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database
		 WHERE datname LIKE 'invoiced\_tmpl\_%' AND datname <> $1`, keepTemplate); err == nil {
		type tmpl struct{ Name, Comment string }
		if all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tmpl]); err == nil {
			for _, t := range all {
				used, err := strconv.ParseInt(strings.TrimPrefix(t.Comment, templateUsedPrefix), 10, 64)
				if err == nil && time.Since(time.Unix(used, 0)) < staleAfter {
					continue
				}
				id := pgx.Identifier{t.Name}.Sanitize()
				_, _ = conn.Exec(ctx, "ALTER DATABASE "+id+" WITH IS_TEMPLATE false")
				_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)")
			}
		}
	}
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE 'invoiced\\_test\\_%'")
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, n := range names {
		var unix int64
		if _, err := fmt.Sscanf(n, "invoiced_test_%d_", &unix); err != nil {
			continue
		}
		if time.Since(time.Unix(unix, 0)) > staleAfter {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)")
		}
	}
}

var (
	adminMu    sync.Mutex
	adminPools = map[string]*pgxpool.Pool{}
)

// adminPool is the test binary's connections to the server's admin
// database, kept for its life: a new PostgreSQL connection forks a backend,
// which costs 25–30 ms on some machines, and a clone plus its drop used to
// open two.
func adminPool(ctx context.Context, admin string) (*pgxpool.Pool, error) {
	adminMu.Lock()
	defer adminMu.Unlock()
	if p, ok := adminPools[admin]; ok {
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(admin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvURL, err)
	}
	// Two at a time: clones of one template queue on it in the server
	// anyway.
	cfg.MaxConns = 2
	bounded(cfg)
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", EnvURL, err)
	}
	adminPools[admin] = p
	return p, nil
}

func randomName(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func createDatabase(t testing.TB, from string) string {
	t.Helper()
	admin := adminURL(t)
	b := connProxy(t).b
	b.enterRoom(t)
	name, err := clone(context.Background(), admin, from)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	disown := b.owns(name)
	t.Cleanup(func() {
		disown()
		if err := drop(context.Background(), admin, name); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	return name
}

// clone creates a database from template from ("" for an empty one).
func clone(ctx context.Context, admin, from string) (string, error) {
	// The creation time in the name lets sweepStale find leftovers of
	// test binaries that were killed before their cleanup ran.
	name := randomName(fmt.Sprintf("invoiced_test_%d_", time.Now().Unix()))
	conn, err := adminPool(ctx, admin)
	if err != nil {
		return "", err
	}
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if from != "" {
		// WAL_LOG (the default) measured faster than FILE_COPY here:
		// FILE_COPY forces two checkpoints per clone.
		stmt += " TEMPLATE " + pgx.Identifier{from}.Sanitize()
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return name, nil
}

func drop(ctx context.Context, admin, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := adminPool(ctx, admin)
	if err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}

// URL returns the URL of a new, migrated database of this test's own,
// dropped at cleanup. Use it to start processes; use Pool for queries.
func URL(t testing.TB) string {
	t.Helper()
	return connProxy(t).url(createDatabase(t, template(t)))
}

// URLOf returns the URL of database name, which the code under test
// creates (as `make run` does), through the proxy: its connections count
// against the bound, and the test holds a room as for a database of its
// own. Dropping it is the test's.
func URLOf(t testing.TB, name string) string {
	t.Helper()
	p := connProxy(t)
	p.b.enterRoom(t)
	t.Cleanup(p.b.owns(name))
	return p.url(name)
}

// EmptyURL returns the URL of a new database with no schema at all, for
// tests of migration itself.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return connProxy(t).url(createDatabase(t, ""))
}

// Pool returns a pool on a new, migrated database of this test's own.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolFor(t, URL(t))
}

// PoolFor opens a pool on url, closed at cleanup; each tune, if any,
// adjusts its config first (runtime parameters of the test's, a bigger
// pool). Pools derived from its Config (an app's River pool) and
// connections made from its ConnConfig (listeners) inherit its handling
// of idle connections.
func PoolFor(t testing.TB, url string, tune ...func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	// 16: enough for a race of many goroutines to interleave (they queue
	// for a connection, as behind the service's own pool of 8).
	cfg.MaxConns = 16
	for _, f := range tune {
		f(cfg)
	}
	if p := bounded(cfg); p != nil {
		// Never more than half of what tests' own databases may hold:
		// one busy pool must leave the other tests some.
		cfg.MaxConns = min(cfg.MaxConns, int32(max(4, (p.b.total-p.b.reserved)/2)))
	}
	cfg.AfterConnect = store.RegisterTypes
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("storetest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// bounded makes a pool close a connection idle for a second: one idling
// in a test's pool must not keep another test waiting for a slot, and a
// test's queries follow each other within milliseconds, so its pool
// still reuses its connections. A pool on the proxy's URL connects
// through the proxy's dial, skipping the copy through it; bounded
// returns the proxy then.
func bounded(cfg *pgxpool.Config) *proxy {
	cfg.MaxConnIdleTime = time.Second
	cfg.HealthCheckPeriod = 250 * time.Millisecond
	p := startedProxy.Load()
	if p == nil || fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port) != p.ln.Addr().String() {
		return nil
	}
	cfg.ConnConfig.DialFunc = p.dial
	return p
}

var (
	sharedOnce  sync.Once
	sharedPool  *pgxpool.Pool
	sharedErr   error
	sharedName  string
	sharedAdmin string
)

// Main runs a test binary's tests and then drops the database that Tx
// shares among them. Call it from TestMain in packages that use Tx:
//
//	func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if sharedPool != nil {
		sharedPool.Close()
		if err := drop(context.Background(), sharedAdmin, sharedName); err != nil {
			fmt.Fprintln(os.Stderr, "storetest:", err)
		}
	}
	adminMu.Lock()
	for _, p := range adminPools {
		p.Close()
	}
	adminMu.Unlock()
	return code
}

// Tx returns a transaction on a migrated database shared by this test
// binary, rolled back at cleanup: the cheapest isolation (no clone) for
// tests that neither commit nor LISTEN. Use Pool for those that do.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	tmpl := template(t)
	admin := adminURL(t)
	sharedOnce.Do(func() {
		// The shared database lives as long as the test binary: Main
		// drops it at exit, and the sweep of stale databases catches a
		// binary that was killed first.
		sharedName, sharedErr = clone(context.Background(), admin, tmpl)
		if sharedErr != nil {
			return
		}
		sharedAdmin = admin
		cfg, err := pgxpool.ParseConfig(WithDatabase(admin, sharedName))
		if err != nil {
			sharedErr = err
			return
		}
		// One connection per running test: go test runs GOMAXPROCS
		// parallel tests at once (-parallel), and parent tests waiting
		// for their subtests may hold a few more.
		cfg.MaxConns = int32(runtime.GOMAXPROCS(0) + 2)
		bounded(cfg)
		sharedPool, sharedErr = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if sharedErr != nil {
		t.Fatalf("storetest: shared database: %v", sharedErr)
	}
	tx, err := sharedPool.Begin(context.Background())
	if err != nil {
		t.Fatalf("storetest: begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}
