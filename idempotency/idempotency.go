// Package idempotency implements the Idempotency-Key header with Stripe's
// semantics for every POST: the first request with a key runs and, when it
// succeeds, its status and body are stored for 24 hours; a retry with the
// same key and the same request replays them (Idempotent-Replayed: true);
// the same key with another request is 422 IDEMPOTENCY_KEY_REUSED; a retry
// while the first is still running is 409 IDEMPOTENCY_KEY_IN_USE. Keys are
// scoped per principal, so two users never see each other's responses.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// Header names.
const (
	HeaderKey      = "Idempotency-Key"
	HeaderReplayed = "Idempotent-Replayed"
)

// Problem codes.
const (
	CodeKeyReused  = "IDEMPOTENCY_KEY_REUSED"
	CodeKeyInUse   = "IDEMPOTENCY_KEY_IN_USE"
	CodeKeyInvalid = "IDEMPOTENCY_KEY_INVALID"
)

// Retention is how long a stored response is replayed (Stripe: 24 h).
const Retention = 24 * time.Hour

// Lease is how long an in-flight key stays taken without finishing: longer
// than any request whose response is stored runs (long polls end within
// 60 s), so only a replica that died mid-request loses its claim. A chat
// stream may run longer (up to its 10-minute conversation lease) but is
// never stored; a retry that reclaims its key meanwhile is refused by the
// conversation's lease (CONVERSATION_BUSY), so it still runs once.
const Lease = 2 * time.Minute

// maxKeyLen follows Stripe's 255-character limit.
const maxKeyLen = 255

// replayedHeaders are the response headers stored and replayed with the
// body; others (Date, request id) belong to the new exchange.
var replayedHeaders = []string{echo.HeaderContentType, echo.HeaderLocation, "ETag"}

// Record is a stored key.
type Record struct {
	PrincipalID uuid.UUID
	Key         string
	RequestHash string
	Status      *int
	Headers     map[string]string
	Body        []byte
	CreatedAt   time.Time
}

func scanRecord(row pgx.Row) (*Record, error) {
	var (
		r   Record
		hdr []byte
	)
	if err := row.Scan(&r.PrincipalID, &r.Key, &r.RequestHash, &r.Status, &hdr, &r.Body, &r.CreatedAt); err != nil {
		return nil, err
	}
	if len(hdr) > 0 {
		if err := json.Unmarshal(hdr, &r.Headers); err != nil {
			return nil, fmt.Errorf("idempotency headers: %w", err)
		}
	}
	return &r, nil
}

const recordColumns = `principal_id, key, request_hash, status, response_headers, response_body, created_at`

// KeyClaim takes key for principal when it is free, expired (older than
// Retention) or abandoned (in flight past its lease). claimed reports
// whether this caller now owns it; otherwise the existing record is
// returned.
func KeyClaim(ctx context.Context, db store.Executor, principal uuid.UUID, key, requestHash, method, path string) (rec *Record, claimed bool, err error) {
	// The holder may release the key between our INSERT and SELECT (which
	// then finds no row); then the key is free and the INSERT is tried
	// again. Three rounds are plenty: each needs a whole request to start
	// and fail in between.
	for range 3 {
		rec, claimed, err = keyClaimOnce(ctx, db, principal, key, requestHash, method, path)
		if !errors.Is(err, pgx.ErrNoRows) {
			return rec, claimed, err
		}
	}
	return rec, claimed, err
}

func keyClaimOnce(ctx context.Context, db store.Executor, principal uuid.UUID, key, requestHash, method, path string) (rec *Record, claimed bool, err error) {
	err = db.QueryRow(ctx, `
		INSERT INTO idempotency_keys AS k (principal_id, key, request_hash, method, path, locked_until, created_at)
		VALUES ($1, $2, $3, $4, $5, now() + $6::interval, now())
		ON CONFLICT (principal_id, key) DO UPDATE SET
			request_hash = EXCLUDED.request_hash, method = EXCLUDED.method, path = EXCLUDED.path,
			locked_until = EXCLUDED.locked_until, created_at = EXCLUDED.created_at,
			status = NULL, response_headers = NULL, response_body = NULL, completed_at = NULL
		WHERE k.created_at < now() - $7::interval
		   OR (k.status IS NULL AND k.locked_until < now())
		RETURNING true`,
		principal, key, requestHash, method, path, Lease.String(), Retention.String()).Scan(&claimed)
	if err == nil {
		return nil, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, store.MapError(err, "idempotency key")
	}
	rec, err = scanRecord(db.QueryRow(ctx, `SELECT `+recordColumns+` FROM idempotency_keys WHERE principal_id = $1 AND key = $2`, principal, key))
	if err != nil {
		return nil, false, store.MapError(err, "idempotency key")
	}
	return rec, false, nil
}

// KeyComplete stores the response of a claimed key.
func KeyComplete(ctx context.Context, db store.Executor, principal uuid.UUID, key string, status int, headers map[string]string, body []byte) error {
	hdr, err := json.Marshal(headers)
	if err != nil {
		return fmt.Errorf("idempotency headers: %w", err)
	}
	_, err = db.Exec(ctx, `
		UPDATE idempotency_keys SET status = $3, response_headers = $4, response_body = $5, completed_at = now()
		WHERE principal_id = $1 AND key = $2 AND status IS NULL`, principal, key, status, hdr, body)
	return store.MapError(err, "idempotency key")
}

// KeyRelease frees a claimed key whose request did not succeed, so a retry
// runs again instead of replaying a refusal that may no longer hold (an
// APPROVAL_REQUIRED before the approval, a 409 before the conflict went).
func KeyRelease(ctx context.Context, db store.Executor, principal uuid.UUID, key string) error {
	_, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE principal_id = $1 AND key = $2 AND status IS NULL`, principal, key)
	return store.MapError(err, "idempotency key")
}

// KeySweep deletes records older than Retention and returns how many.
func KeySweep(ctx context.Context, db store.Executor) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - $1::interval`, Retention.String())
	if err != nil {
		return 0, store.MapError(err, "idempotency keys")
	}
	return tag.RowsAffected(), nil
}

// requestHash fingerprints what makes two requests "the same": method,
// path with query, and the exact body bytes (Stripe compares parameters;
// byte equality is stricter and never replays a different request).
func requestHash(method, uri string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", method, uri)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// recorder tees the response body so it can be stored. A stream
// (text/event-stream) is never stored, so it is not copied either.
type recorder struct {
	http.ResponseWriter
	buf bytes.Buffer
}

// Write keeps a copy of b for the stored response and passes it on.
func (r *recorder) Write(b []byte) (int, error) {
	if !isStream(r.Header()) {
		r.buf.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// Flush passes a streaming handler's flush on (POST /v1/chat flushes).
func (r *recorder) Flush() {
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func isStream(h http.Header) bool {
	return strings.HasPrefix(h.Get(echo.HeaderContentType), "text/event-stream")
}

// runClaimed runs next for a claimed key. A panic releases the key, so a
// retry runs instead of finding the key in use until its lease ends, and
// then goes on to the Recover middleware.
func runClaimed(ctx context.Context, db store.Executor, c echo.Context, next echo.HandlerFunc, owner uuid.UUID, key string) error {
	defer func() {
		if v := recover(); v != nil {
			_ = KeyRelease(ctx, db, owner, key)
			panic(v)
		}
	}()
	return next(c)
}

// Middleware applies the Idempotency-Key semantics to POST requests that
// carry the header; it must run after authentication. The database writes
// run outside the handler's transaction, under context.WithoutCancel, so a
// client hanging up cannot leave a key claimed until its lease runs out.
func Middleware(db store.Executor) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			keys := req.Header.Values(HeaderKey)
			if req.Method != http.MethodPost || len(keys) == 0 {
				return next(c)
			}
			// Before anything about the request is answered: a caller that
			// does not authenticate gets the 401 whatever else is wrong
			// (a route that defers its token resolves it here).
			p, err := identity.RequestPrincipal(c)
			if err != nil {
				return err
			}
			key := keys[0]
			// The key is stored as text: bytes that are not UTF-8 (legal in
			// a header as obs-text) would fail in PostgreSQL as a 500. An
			// empty key is a client that meant to send one and lost it: run
			// without it, a retry could make the effect twice. Two keys
			// leave unclear which one the retry will send.
			if len(keys) > 1 || key == "" || len(key) > maxKeyLen || strings.TrimSpace(key) != key || !utf8.ValidString(key) || strings.ContainsFunc(key, unicode.IsControl) {
				return problem.BadRequest(CodeKeyInvalid, fmt.Sprintf("send one Idempotency-Key header of 1 to %d bytes of UTF-8 text without control characters or surrounding spaces", maxKeyLen))
			}
			body, err := server.ReadBodyBytes(c)
			if err != nil {
				return err // the body limit's 413
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			hash := requestHash(req.Method, req.URL.RequestURI(), body)
			ctx := context.WithoutCancel(req.Context())

			rec, claimed, err := KeyClaim(ctx, db, p.UserID, key, hash, req.Method, req.URL.RequestURI())
			if err != nil {
				return err
			}
			if !claimed {
				return answerExisting(c, rec, hash)
			}

			w := &recorder{ResponseWriter: c.Response().Writer}
			c.Response().Writer = w
			if err := runClaimed(ctx, db, c, next, p.UserID, key); err != nil {
				// Write the problem now so the outcome is known here.
				c.Error(err)
			}
			status := c.Response().Status
			if status < 200 || status > 299 || isStream(c.Response().Header()) {
				return KeyRelease(ctx, db, p.UserID, key)
			}
			hdr := map[string]string{}
			for _, h := range replayedHeaders {
				if v := c.Response().Header().Get(h); v != "" {
					hdr[h] = v
				}
			}
			return KeyComplete(ctx, db, p.UserID, key, status, hdr, w.buf.Bytes())
		}
	}
}

func answerExisting(c echo.Context, rec *Record, hash string) error {
	if rec.RequestHash != hash {
		return problem.New(http.StatusUnprocessableEntity, CodeKeyReused,
			"this Idempotency-Key was used with a different request in the last 24 hours; use a new key for a new request")
	}
	if rec.Status == nil {
		return problem.Conflict(CodeKeyInUse, "a request with this Idempotency-Key is still being processed; retry shortly")
	}
	for k, v := range rec.Headers {
		c.Response().Header().Set(k, v)
	}
	c.Response().Header().Set(HeaderReplayed, "true")
	c.Response().WriteHeader(*rec.Status)
	_, err := c.Response().Write(rec.Body)
	return err
}
