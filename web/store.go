package web

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// The inbox's SQL: sessions, sign-in counters and what the invoice page
// reads of the policy's effects, each function a statement or two over
// store.Executor. A session is stored under the SHA-256 of its id
// (sessionHash), never the id.

// ---- sessions ----

// sessionColumns follow identity.UserColumns in a session's row.
const sessionColumns = `s.csrf_token, s.created_at, s.expires_at, s.last_seen_at`

// scanSession maps a row of identity.UserColumns and sessionColumns to the
// session with its user, and when it was last seen.
func scanSession(row pgx.Row) (*Session, time.Time, error) {
	var (
		s        Session
		lastSeen time.Time
	)
	u, err := identity.ScanUser(row, &s.CSRFToken, &s.CreatedAt, &s.ExpiresAt, &lastSeen)
	if err != nil {
		return nil, time.Time{}, err
	}
	s.User = u
	return &s, lastSeen, nil
}

// sessionInsert stores a session for userID under idHash, with csrf as its
// forms' token, ending at the latest after absolute; it returns when it
// was created and when it ends.
func sessionInsert(ctx context.Context, db store.Executor, idHash []byte, userID uuid.UUID, csrf string, absolute time.Duration) (created, expires time.Time, err error) {
	err = db.QueryRow(ctx, `
		INSERT INTO web_sessions (id_sha256, user_id, csrf_token, expires_at)
		VALUES ($1, $2, $3, now() + make_interval(secs => $4))
		RETURNING created_at, expires_at`, idHash, userID, csrf, absolute.Seconds()).Scan(&created, &expires)
	if err != nil {
		return time.Time{}, time.Time{}, store.MapError(err, "session")
	}
	return created, expires, nil
}

// sessionGetLive returns the session stored under idHash, with when it was
// last seen, if it is live: not past its absolute expiry, seen within
// idle, its user enabled. Any other is errNoSession.
func sessionGetLive(ctx context.Context, db store.Executor, idHash []byte, idle time.Duration) (*Session, time.Time, error) {
	s, lastSeen, err := scanSession(db.QueryRow(ctx, `
		SELECT `+identity.UserColumns+`, `+sessionColumns+`
		FROM web_sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id_sha256 = $1 AND NOT u.disabled
		  AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => $2)`,
		idHash, idle.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, time.Time{}, errNoSession
	}
	if err != nil {
		return nil, time.Time{}, store.MapError(err, "session")
	}
	return s, lastSeen, nil
}

// sessionTouch restarts the idle clock of the session under idHash.
func sessionTouch(ctx context.Context, db store.Executor, idHash []byte) error {
	_, err := db.Exec(ctx, `UPDATE web_sessions SET last_seen_at = now() WHERE id_sha256 = $1`, idHash)
	return store.MapError(err, "session")
}

// SessionDelete ends the session with id; ending one that is already gone
// is not an error, so signing out twice is harmless.
func SessionDelete(ctx context.Context, db store.Executor, id string) error {
	_, err := db.Exec(ctx, `DELETE FROM web_sessions WHERE id_sha256 = $1`, sessionHash(id))
	return store.MapError(err, "session")
}

// SessionSweep deletes sessions past their absolute or idle expiry, and
// sign-in counters whose window ended more than a day ago, and returns how
// many sessions it deleted. Sign-in runs it, so the tables stay as small
// as the number of people who use the inbox without a background job.
func SessionSweep(ctx context.Context, db store.Executor, idle time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, `
		DELETE FROM web_sessions
		WHERE expires_at <= now() OR last_seen_at <= now() - make_interval(secs => $1)`, idle.Seconds())
	if err != nil {
		return 0, store.MapError(err, "session")
	}
	if _, err := db.Exec(ctx, `DELETE FROM web_login_throttle WHERE window_start < now() - interval '1 day'`); err != nil {
		return 0, store.MapError(err, "sign-in attempt")
	}
	return tag.RowsAffected(), nil
}

// ---- sign-in counters ----

// throttleCount counts one attempt for key in its window of length
// window, starting a new window once the last one ended, and returns the
// window's attempts so far and the seconds until it ends. The count and
// the read are one upsert, so concurrent attempts each see their own
// count.
func throttleCount(ctx context.Context, db store.Executor, key string, window time.Duration) (attempts int, retry float64, err error) {
	err = db.QueryRow(ctx, `
		INSERT INTO web_login_throttle AS t (key, window_start, attempts) VALUES ($1, now(), 1)
		ON CONFLICT (key) DO UPDATE SET
			attempts     = CASE WHEN t.window_start <= now() - make_interval(secs => $2) THEN 1 ELSE t.attempts + 1 END,
			window_start = CASE WHEN t.window_start <= now() - make_interval(secs => $2) THEN now() ELSE t.window_start END
		RETURNING attempts, extract(epoch FROM window_start + make_interval(secs => $2) - now())::float8`,
		key, window.Seconds()).Scan(&attempts, &retry)
	if err != nil {
		return 0, 0, store.MapError(err, "sign-in attempt")
	}
	return attempts, retry, nil
}

// throttleReset clears key's count after a successful sign-in, so a user
// who finally types the right password starts afresh.
func throttleReset(ctx context.Context, db store.Executor, key string) error {
	_, err := db.Exec(ctx, `DELETE FROM web_login_throttle WHERE key = $1`, key)
	return store.MapError(err, "sign-in attempt")
}

// ---- policy effects ----

// issueEffect is what let an invoice's issue through, as the gate
// recorded it in policy_effects: the approval it spent, or the standing
// allowance it drew.
type issueEffect struct {
	At time.Time
	// Requester is the issuer's display name, else their username.
	Requester       string
	ApprovalID      *uuid.UUID
	AllowanceID     *uuid.UUID
	AllowanceReason string
}

// issueEffectGet returns the effect of inv's issue; nil when none is
// recorded (an invoice issued before migration 00052 added effects).
// Its customer and currency bound the read to that customer's issues
// (policy_effects_customer_idx), not every issue there has been.
func issueEffectGet(ctx context.Context, db store.Executor, inv *invoices.Invoice) (*issueEffect, error) {
	var e issueEffect
	err := db.QueryRow(ctx, `
		SELECT e.at, coalesce(nullif(u.display_name, ''), u.username), e.approval_id, e.allowance_id, coalesce(a.reason, '')
		FROM policy_effects e
		JOIN users u ON u.id = e.requester
		LEFT JOIN allowances a ON a.id = e.allowance_id
		WHERE e.capability = $1 AND e.currency = $2 AND e.customer_id = $3 AND e.target_type = 'invoice' AND e.target_id = $4
		ORDER BY e.at DESC LIMIT 1`, invoices.CapIssue, inv.Currency, inv.CustomerID, inv.ID.String()).
		Scan(&e.At, &e.Requester, &e.ApprovalID, &e.AllowanceID, &e.AllowanceReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, store.MapError(err, "approval policy effect")
	}
	return &e, nil
}
