package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
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
	if s.CreatedAt, s.ExpiresAt, err = sessionInsert(ctx, db, sessionHash(id), userID, csrf, absolute); err != nil {
		return "", nil, err
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
	hash := sessionHash(id)
	s, lastSeen, err := sessionGetLive(ctx, db, hash, idle)
	if err != nil {
		return nil, err
	}
	if touch && time.Since(lastSeen) > sessionTouchGranularity {
		if err := sessionTouch(ctx, db, hash); err != nil {
			return nil, err
		}
	}
	return s, nil
}
