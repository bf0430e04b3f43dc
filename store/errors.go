package store

import (
	"errors"
	"fmt"

	"github.com/invoiced/invoiced/problem"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MapError is the one place where database errors become domain errors:
// no rows → 404 for what, unique violation → 409 CONFLICT, check and
// not-null violations → 422, invalid text representation (a malformed
// uuid) → 404 for what because an id that cannot exist does not exist.
// Any other error is wrapped with %w and returned as is.
func MapError(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := problem.As(err); ok {
		return err
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
