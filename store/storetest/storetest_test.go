package storetest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkPerTestDatabase measures what each test pays for its own
// database, as Pool gives it: cloning the migrated template, opening a pool
// on the clone and its first connection, closing it, and dropping the clone
// at cleanup. Target: under 150 ms (issue 2). Run with `make bench-testdb`.
func BenchmarkPerTestDatabase(b *testing.B) {
	admin := adminURL(b)
	tmpl := template(b)
	ctx := context.Background()
	for b.Loop() {
		name, err := clone(ctx, admin, tmpl)
		if err != nil {
			b.Fatal(err)
		}
		pool, err := pgxpool.New(ctx, WithDatabase(admin, name))
		if err != nil {
			b.Fatal(err)
		}
		if err := pool.Ping(ctx); err != nil {
			b.Fatal(err)
		}
		pool.Close()
		if err := drop(ctx, admin, name); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/db")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/150, "ratio-to-150ms")
}

// TestPoolIsIsolated shows two tests' databases do not see each other.
func TestPoolIsIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := Pool(t), Pool(t)
	if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database b sees a's table")
	}
	if err := b.QueryRow(ctx, "SELECT count(*) FROM users").Scan(&n); err != nil {
		t.Fatalf("clone is migrated: %v", err)
	}
}

// TestSweepKeepsTemplatesInUse shows the sweep drops another migration
// set's template only when no test binary has used it for staleAfter, so
// a concurrent test run of another checkout keeps its template.
func TestSweepKeepsTemplatesInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := adminURL(t)
	keep := template(t)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	fresh, stale := randomName("invoiced_tmpl_fresh"), randomName("invoiced_tmpl_stale")
	for _, n := range []string{fresh, stale} {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{n}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = drop(context.Background(), admin, n) })
	}
	if err := markUsed(ctx, conn, fresh); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-staleAfter - time.Minute).Unix()
	if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+pgx.Identifier{stale}.Sanitize()+" IS '"+templateUsedPrefix+strconv.FormatInt(old, 10)+"'"); err != nil {
		t.Fatal(err)
	}
	sweepStale(ctx, conn, keep)
	exists := func(n string) bool {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", n).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists(fresh) {
		t.Fatal("a template used within staleAfter was swept")
	}
	if exists(stale) {
		t.Fatal("a template unused for longer than staleAfter was kept")
	}
	if !exists(keep) {
		t.Fatal("the current template was swept")
	}
}

// TestURLOfNamesADatabaseTheCodeCreates: a test whose code creates its
// database (make run) gets its URL through the proxy, before it exists.
func TestURLOfNamesADatabaseTheCodeCreates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := randomName("invoiced_test_urlof_")
	url := URLOf(t, name)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), connProxy(t).ln.Addr().String(); got != want {
		t.Fatalf("URLOf names %s, not the proxy at %s", got, want)
	}
	admin, err := pgx.Connect(ctx, adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background(), adminURL(t), name) })
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db != name {
		t.Fatalf("connected to %q, not %q", db, name)
	}
}
