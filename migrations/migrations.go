// Package migrations embeds the goose SQL migrations and builds the goose
// Provider that `invoiced migrate` and the test helper use. Every migration
// has a working down section; tests run up, down to zero and up again.
package migrations

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:generate go run ./internal/rivergen

//go:embed *.sql
var files embed.FS

// FS returns the embedded migration files.
func FS() embed.FS { return files }

// Open opens a database/sql handle for goose on the given libpq URL (empty
// means libpq defaults). The caller closes it.
func Open(url string) (*sql.DB, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	return stdlib.OpenDB(*cc), nil
}

// lockWait is how long a migrator waits for another to finish: 5 minutes,
// as goose's locker below (1 s × 300 tries).
const lockWait = "5min"

// NewProvider returns a goose Provider over the embedded migrations that
// takes goose's Postgres session advisory lock, so two replicas or two
// operators never migrate one database at once. log may be nil.
func NewProvider(db *sql.DB, log *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker(
		// Retry every 1s for 300 tries: a second migrator waits up to
		// 5 minutes for the first instead of failing.
		lock.WithLockTimeout(1, 300),
	)
	if err != nil {
		return nil, fmt.Errorf("session locker: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true)}
	if log != nil {
		opts = append(opts, goose.WithSlog(log))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, opts...)
	if err != nil {
		return nil, fmt.Errorf("goose provider: %w", err)
	}
	return p, nil
}

// Behind reports the current and latest schema versions and whether the
// database is behind the embedded migrations.
func Behind(ctx context.Context, p *goose.Provider) (current, latest int64, behind bool, err error) {
	current, latest, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, false, fmt.Errorf("schema version: %w", err)
	}
	return current, latest, current < latest, nil
}

// Redo rolls back the latest migration and applies it again under one
// hold of the migration lock, so no other migrator (another `migrate`, a
// `serve --migrate`) runs between the two steps. It takes the lock goose's
// locker takes, on a session of its own, and waits for it as long. db
// must allow two connections: the lock's session and goose's.
func Redo(ctx context.Context, db *sql.DB) (down, up *goose.MigrationResult, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lock.DefaultLockID)
		// The session carries the timeouts set below (and the lock, had
		// the unlock failed): end it instead of handing it back to db's
		// pool.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = conn.Close()
	}()
	// Wait for the lock as long as goose's locker would, whatever
	// statement_timeout the URL sets.
	if _, err := conn.ExecContext(ctx, "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', '0', false)", lockWait); err != nil {
		return nil, nil, fmt.Errorf("migration lock: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", lock.DefaultLockID); err != nil {
		return nil, nil, fmt.Errorf("migration lock: %w", err)
	}
	// No locker: this session holds the lock for both steps.
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, nil, fmt.Errorf("goose provider: %w", err)
	}
	if down, err = p.Down(ctx); err != nil {
		return nil, nil, err
	}
	if up, err = p.UpByOne(ctx); err != nil {
		return down, nil, err
	}
	return down, up, nil
}
