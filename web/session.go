package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
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

// SignInLinkTTL is how long a one-time sign-in link works: time to copy
// it from a terminal or a message into a browser, and short enough that
// one left in a scrollback or an inbox has stopped working.
const SignInLinkTTL = 15 * time.Minute

// SignInLinkPath is the page a sign-in link opens, its secret in the
// token query parameter. The access log records paths only, never the
// query, so the secret is not logged.
const SignInLinkPath = "/login/link"

// errLinkGone is every sign-in link that cannot be used: unknown, used,
// expired, or its user disabled. One answer for all, so it tells nobody
// which links exist.
var errLinkGone = problem.New(http.StatusGone, CodeSignInLinkGone,
	"this sign-in link has expired, has been used, or does not exist: ask an admin for a new one")

// CodeSignInLinkGone is the problem code of a sign-in link that cannot
// be used.
const CodeSignInLinkGone = "SIGNIN_LINK_GONE"

// SignInLinkCreate makes a one-time sign-in link for userID, valid for
// SignInLinkTTL: it returns the secret for the link, shown this once,
// and when it stops working. Only its SHA-256 is stored. Links past
// their expiry are swept in the same statement, so the table holds only
// the few links in use.
func SignInLinkCreate(ctx context.Context, db store.Executor, userID uuid.UUID) (secret string, expires time.Time, err error) {
	secret, err = randomToken()
	if err != nil {
		return "", time.Time{}, err
	}
	err = db.QueryRow(ctx, `
		WITH swept AS (DELETE FROM signin_links WHERE expires_at <= now())
		INSERT INTO signin_links (id_sha256, user_id, expires_at)
		VALUES ($1, $2, now() + make_interval(secs => $3))
		RETURNING expires_at`, sessionHash(secret), userID, SignInLinkTTL.Seconds()).Scan(&expires)
	if err != nil {
		return "", time.Time{}, store.MapError(err, "sign-in link")
	}
	return secret, expires, nil
}

// signInLinkUser returns the enabled user whose link has secret, while
// it works; it uses nothing, so a link preview that opens the page
// leaves the link to its user.
func signInLinkUser(ctx context.Context, db store.Executor, secret string) (*identity.User, error) {
	if secret == "" || len(secret) > 128 {
		return nil, errLinkGone
	}
	u, err := identity.ScanUser(db.QueryRow(ctx, `
		SELECT `+identity.UserColumns+`
		FROM signin_links l JOIN users u ON u.id = l.user_id
		WHERE l.id_sha256 = $1 AND l.expires_at > now() AND NOT u.disabled`, sessionHash(secret)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errLinkGone
	}
	return u, store.MapError(err, "sign-in link")
}

// signInLinkUseTx uses the link with secret: it deletes it and returns
// its enabled user, or errLinkGone. Of two uses at once, the second waits
// for the first's row lock and then finds no row: one use, one session.
func signInLinkUseTx(ctx context.Context, tx pgx.Tx, secret string) (*identity.User, error) {
	if secret == "" || len(secret) > 128 {
		return nil, errLinkGone
	}
	u, err := identity.ScanUser(tx.QueryRow(ctx, `
		DELETE FROM signin_links l USING users u
		WHERE l.id_sha256 = $1 AND u.id = l.user_id AND l.expires_at > now() AND NOT u.disabled
		RETURNING `+identity.UserColumns, sessionHash(secret)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errLinkGone
	}
	return u, store.MapError(err, "sign-in link")
}
