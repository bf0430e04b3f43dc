package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/invoiced/invoiced/problem"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MapError is the one place where database errors become domain errors:
// no rows → 404 for what, unique violation → 409 CONFLICT, check and
// not-null violations → 422, invalid text representation (a malformed
// uuid) → 404 for what because an id that cannot exist does not exist, a
// database that cannot be reached or accepts no writes → 503 UNAVAILABLE
// (Unavailable). Any
// other error is wrapped with %w and returned as is.
func MapError(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := problem.As(err); ok {
		return err
	}
	if IsUnavailable(err) {
		return Unavailable(err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		e := problem.NotFound(what)
		e.Err = err
		return e
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			e := problem.Conflict(problem.CodeConflict, what+" already exists")
			e.Err = err
			return e
		case "23514", "23502":
			e := problem.Invalid(pgErr.ColumnName, "violates rule %s", pgErr.ConstraintName)
			e.Err = err
			return e
		case "22P02":
			e := problem.NotFound(what)
			e.Err = err
			return e
		case "22P05", "22021":
			// U+0000 in text or jsonb (or bytes that are not UTF-8): the
			// client's input, so a 422 rather than a 500, for any path
			// that did not refuse it earlier with a precise field.
			e := problem.Invalid(what, "holds a character PostgreSQL cannot store, such as U+0000")
			e.Err = err
			return e
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// IsUniqueViolation reports whether err is a unique violation of constraint
// (any constraint when constraint is empty).
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (constraint == "" || pgErr.ConstraintName == constraint)
}

// RetryUnavailable is the Retry-After of a 503 for an unreachable
// database: 5 s, about what a restart of PostgreSQL takes. The pool
// reconnects by itself on the next request, so a client that comes back
// sooner costs one refused connection attempt, nothing more.
const RetryUnavailable = 5 * time.Second

// Unavailable is the 503 UNAVAILABLE of a request the database could not
// serve: the cause goes to the log, never to the client.
func Unavailable(err error) *problem.Error {
	detail := "the service cannot reach its database; retry shortly"
	if isReadOnly(err) {
		detail = "the service's database accepts no changes right now; retry shortly"
	}
	p := problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable, detail)
	p.RetryAfter = RetryUnavailable
	p.Err = err
	return p
}

// isReadOnly reports whether err is a write the database refused because
// it accepts none (25006 read_only_sql_transaction): a hot standby, such
// as one a pooled connection still points at after a failover, or a
// database set read-only for maintenance.
func isReadOnly(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "25006"
}

// IsUnavailable reports whether err means the database cannot serve the
// request, as pgx v5 reports it: a connection attempt that failed
// (refused, timed out, no socket); the server ending sessions as it shuts
// down or crashes (57P01, 57P02), starting up (57P03) or out of
// connection slots (53300), or any connection exception (class 08); a
// connection closed under a statement (io.ErrUnexpectedEOF,
// pgconn.ErrConnClosed) or failing on the network; or a write refused by
// a database that accepts none (25006: a standby, or read-only mode),
// which, like the others, passes when a primary is back. A cancelled
// context is the caller's end, and so is a deadline outside a connection
// attempt (inside one, it is the connect timeout). Known gap: a write in
// one of this service's own read-only snapshots (store.ReadSnapshot) is
// 25006 too, a bug that would answer 503 rather than 500.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "53300", "25006":
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	// An HTTP client's error (a model provider's) is a net.Error too,
	// and never the database's.
	var urlErr *url.Error
	var netErr net.Error
	return !errors.As(err, &urlErr) && errors.As(err, &netErr)
}
