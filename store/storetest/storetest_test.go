package storetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkPerTestDatabase measures what each test pays for its own
// database, as Pool gives it: cloning the migrated template, opening a pool
// on the clone and its first connection, closing it, and dropping the clone
// at cleanup. Target: under 150 ms (issue 2). Run with `make bench-testdb`.
func BenchmarkPerTestDatabase(b *testing.B) {
	admin := ServerURL(b)
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
