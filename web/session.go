package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Session is a signed-in browser: the user and the CSRF token its forms
// carry. The session id itself is never kept beyond the cookie.
type Session struct {
	User      *identity.User
	CSRFToken string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// sessionTouchGranularity bounds last_seen_at writes to one per session per
// minute, so a page view stays a read.
const sessionTouchGranularity = time.Minute

func randomToken() (string, error) {
	var raw [32]byte // 256 bits
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("session entropy: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

func sessionHash(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return sum[:]
}

// SessionCreate starts a session for userID that ends at the latest after
// absolute; it returns the id for the cookie, shown this once.
func SessionCreate(ctx context.Context, db store.Executor, userID uuid.UUID, absolute time.Duration) (id string, s *Session, err error) {
	id, err = randomToken()
	if err != nil {
		return "", nil, err
	}
	csrf, err := randomToken()
	if err != nil {
		return "", nil, err
	}
	s = &Session{CSRFToken: csrf}
	err = db.QueryRow(ctx, `
		INSERT INTO web_sessions (id_sha256, user_id, csrf_token, expires_at)
		VALUES ($1, $2, $3, now() + make_interval(secs => $4))
		RETURNING created_at, expires_at`, sessionHash(id), userID, csrf, absolute.Seconds()).Scan(&s.CreatedAt, &s.ExpiresAt)
	if err != nil {
		return "", nil, store.MapError(err, "session")
	}
	return id, s, nil
}

// errNoSession is what every unusable session id becomes: unknown, ended,
// idle too long, past its absolute expiry, or its user disabled.
var errNoSession = problem.Unauthenticated("sign in to continue")

// sessionGet returns the live session with id; any session that is not
// live is a 401. touch refreshes its idle clock.
func sessionGet(ctx context.Context, db store.Executor, id string, idle time.Duration, touch bool) (*Session, error) {
	if id == "" || len(id) > 128 {
		return nil, errNoSession
	}
	var (
		s        Session
		lastSeen time.Time
	)
	u, err := identity.ScanUser(db.QueryRow(ctx, `
		SELECT `+identity.UserColumns+`, s.csrf_token, s.created_at, s.expires_at, s.last_seen_at
		FROM web_sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id_sha256 = $1 AND NOT u.disabled
		  AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => $2)`,
		sessionHash(id), idle.Seconds()), &s.CSRFToken, &s.CreatedAt, &s.ExpiresAt, &lastSeen)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, store.MapError(err, "session")
	}
	if touch && time.Since(lastSeen) > sessionTouchGranularity {
		if _, err := db.Exec(ctx, `UPDATE web_sessions SET last_seen_at = now() WHERE id_sha256 = $1`, sessionHash(id)); err != nil {
			return nil, store.MapError(err, "session")
		}
	}
	s.User = u
	return &s, nil
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
