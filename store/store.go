// Package store owns the PostgreSQL connection pool, the transaction helper and
// the mapping of database errors to domain errors. Feature packages take an
// Executor right after ctx so that a caller's transaction is always visible.
package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"
)

// Executor is what both *pgxpool.Pool and pgx.Tx satisfy: queries take it so
// that the caller decides whether they run in a transaction.
type Executor interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

var (
	_ Executor = (*pgxpool.Pool)(nil)
	_ Executor = (pgx.Tx)(nil)
)

// PoolConfig tunes the pool. MaxConns bounds database concurrency: under
// overload a bounded pool queues in Go instead of thrashing Postgres locks.
type PoolConfig struct {
	// URL is a libpq connection string or URL; empty means libpq defaults
	// (PGHOST, PGUSER, … environment variables, then the local socket).
	URL string
	// MaxConns is the pool size; 0 means the URL's pool_max_conns if it
	// has one, else DefaultMaxConns.
	MaxConns int32
}

// DefaultMaxConns is 4 connections per core, at least 8: enough to keep
// Postgres busy while requests wait on the network, few enough that lock
// queues form in the pool rather than inside Postgres under overload.
func DefaultMaxConns() int32 {
	return int32(max(8, 4*runtime.NumCPU()))
}

// DefaultConnectTimeout bounds one connection attempt when the URL sets
// no connect_timeout. Without it, a database host that drops packets
// would hold each request for the kernel's TCP retries (about 2 min on
// Linux) before its 503; 5 s is far above a healthy connect (milliseconds
// nearby, tens of them across regions with TLS).
const DefaultConnectTimeout = 5 * time.Second

// URLSetsMaxConns reports whether a connection string sizes the pool
// itself (pgxpool's pool_max_conns), as a URL query parameter or a
// keyword/value pair.
func URLSetsMaxConns(connString string) bool {
	if strings.Contains(connString, "://") {
		u, err := url.Parse(connString)
		return err == nil && u.Query().Has("pool_max_conns")
	}
	for _, f := range strings.Fields(connString) {
		if k, _, ok := strings.Cut(f, "="); ok && strings.TrimSpace(k) == "pool_max_conns" {
			return true
		}
	}
	return false
}

// Open connects a pool and pings it so a bad URL fails at start, not at the
// first request.
func Open(ctx context.Context, cfg PoolConfig) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	switch {
	case cfg.MaxConns > 0:
		pc.MaxConns = cfg.MaxConns
	case !URLSetsMaxConns(cfg.URL):
		pc.MaxConns = DefaultMaxConns()
	}
	pc.ConnConfig.RuntimeParams["application_name"] = "invoiced"
	pc.AfterConnect = RegisterTypes
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database (%s): %w", describe(pc), err)
	}
	return pool, nil
}

// RegisterTypes teaches a connection the Go types our queries pass that pgx
// does not know: google/uuid's UUID is encoded and scanned as the uuid type
// itself. Without it each uuid.UUID argument goes through its driver.Valuer
// (formatted as text, refused by the binary uuid codec, parsed back, encoded
// again): 5 % of the server's CPU in a chat under bench-chat.
func RegisterTypes(_ context.Context, conn *pgx.Conn) error {
	pgxuuid.Register(conn.TypeMap())
	return nil
}

func describe(pc *pgxpool.Config) string {
	return fmt.Sprintf("host=%s port=%d database=%s user=%s", pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database, pc.ConnConfig.User)
}

// ReadSnapshot runs fn on one snapshot of the database, for a read made of
// several statements (a row, then its children): on a pool each statement
// would see the database at its own moment, and a write committed in
// between showed, say, invoice lines that did not add up to the totals
// beside them. On a pool fn runs in a read-only REPEATABLE READ
// transaction; given a transaction, fn joins it.
func ReadSnapshot(ctx context.Context, db Executor, fn func(db Executor) error) error {
	b, ok := db.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	})
	if !ok {
		return fn(db)
	}
	tx, err := b.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return MapError(err, "snapshot")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	return MapError(tx.Commit(ctx), "snapshot")
}

// maxTxAttempts bounds WithTx retries: 5 attempts with 5–80 ms jittered
// backoff cover typical serialization conflicts without hiding a livelock.
const maxTxAttempts = 5

// WithTx runs fn in a transaction on db, committing when fn returns nil and
// rolling back on error or panic. Serialization failures (40001) and
// deadlocks (40P01) rerun the whole function, at most maxTxAttempts times,
// so fn must not have side effects outside the transaction. Rollback runs
// under context.WithoutCancel so a cancelled request still releases locks.
func WithTx(ctx context.Context, db Executor, fn func(ctx context.Context, tx pgx.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = runTx(ctx, db, fn)
		if err == nil || !retryable(err) || attempt == maxTxAttempts {
			return err
		}
		backoff := time.Duration(5<<(attempt-1)) * time.Millisecond
		jitter := time.Duration(rand.Int64N(int64(backoff)))
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff/2 + jitter):
		}
	}
	return err
}

// commitAnd is an error that WithTx commits before returning.
type commitAnd struct{ err error }

// Error is the wrapped error's message.
func (c *commitAnd) Error() string { return c.err.Error() }

// Unwrap returns the wrapped error, so errors.Is and As see through it.
func (c *commitAnd) Unwrap() error { return c.err }

// CommitAnd wraps err so that WithTx commits the transaction and then
// returns err: for refusals that must leave a durable record, such as the
// pending approval request behind an APPROVAL_REQUIRED answer. Outside
// WithTx it is just err.
func CommitAnd(err error) error {
	if err == nil {
		return nil
	}
	return &commitAnd{err: err}
}

func runTx(ctx context.Context, db Executor, fn func(ctx context.Context, tx pgx.Tx) error) (err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	// A savepoint inside a caller's transaction is not the effect's
	// transaction: the outermost one is.
	hook, _ := ctx.Value(txHookKey{}).(TxHook)
	if _, nested := db.(pgx.Tx); nested {
		hook = nil
	}
	if hook != nil {
		if err = hook.Begin(ctx, tx); err != nil {
			return err
		}
	}
	if err = fn(ctx, tx); err != nil {
		var ca *commitAnd
		if !errors.As(err, &ca) {
			return err
		}
		if cerr := tx.Commit(ctx); cerr != nil {
			return fmt.Errorf("commit: %w", cerr)
		}
		return ca.err
	}
	if hook != nil {
		hook.Hold(tx)
		return nil
	}
	if err = tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// A TxHook finishes a request in the transaction of its effect: the
// Idempotency-Key's claim and stored response commit with the effect or
// not at all (ADR-0020). WithTx calls the hook of its ctx (WithTxHook) on
// each attempt of a transaction it begins on a pool: Begin first (an
// error rolls the attempt back and is WithTx's answer), and Hold instead
// of Commit: WithTx then returns nil and the hook commits or rolls back tx
// itself, once the response is known. A CommitAnd refusal commits as
// usual: a refusal is not the effect.
type TxHook interface {
	Begin(ctx context.Context, tx pgx.Tx) error
	Hold(tx pgx.Tx)
}

type txHookKey struct{}

// WithTxHook returns ctx carrying h for the transactions WithTx begins.
func WithTxHook(ctx context.Context, h TxHook) context.Context {
	return context.WithValue(ctx, txHookKey{}, h)
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return false
}

// WithTxResult is WithTx for a function that produces a value: the value of
// the attempt that committed, or the zero value and the error.
func WithTxResult[T any](ctx context.Context, db Executor, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var out T
	err := WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = fn(ctx, tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}
