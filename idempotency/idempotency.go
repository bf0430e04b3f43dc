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
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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

// Lease is how long the key of a streaming request (the chat's POST,
// whose effects are many transactions over minutes, never stored) stays
// taken without finishing: the request releases it when the stream ends,
// so only a replica that died mid-stream leaves it held. A chat may run
// longer (up to its 10-minute conversation lease); a retry that reclaims
// its key meanwhile is refused by the conversation's lease
// (CONVERSATION_BUSY), so it still runs once. Every other request
// completes its key in its effect's transaction and needs no lease.
const Lease = 2 * time.Minute

// retryAfter is the Retry-After of IDEMPOTENCY_KEY_IN_USE, in seconds:
// the key is held by a stream, which a client following it (GET
// /v1/chat/{id}/stream) sees end; one second is a poll that costs little.
const retryAfter = "1"

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

// keyed is one request that carries a key: who sent it, the key, and the
// fingerprint that makes two requests the same one.
type keyed struct {
	principal uuid.UUID
	key       string
	hash      string
	method    string
	path      string
}

// response is what is stored for a key and replayed.
type response struct {
	status  int
	headers map[string]string
	body    []byte
}

// keyClaim takes the key when it is free, expired (older than Retention)
// or abandoned (in flight past its lease), writing resp with it when resp
// is not nil; claimed reports whether it did, and otherwise the existing
// record is returned. In a transaction the claim is invisible until
// commit, and a concurrent claim of the same key waits for that commit or
// rollback (the primary key's index): such a claim needs no lease.
func keyClaim(ctx context.Context, db store.Executor, k keyed, lease time.Duration, resp *response) (rec *Record, claimed bool, err error) {
	// The holder may release the key between our INSERT and SELECT (which
	// then finds no row); then the key is free and the INSERT is tried
	// again. Three rounds are plenty: each needs a whole request to start
	// and fail in between.
	for range 3 {
		rec, claimed, err = keyClaimOnce(ctx, db, k, lease, resp)
		if !errors.Is(err, pgx.ErrNoRows) {
			return rec, claimed, err
		}
	}
	return rec, claimed, err
}

func keyClaimOnce(ctx context.Context, db store.Executor, k keyed, lease time.Duration, resp *response) (rec *Record, claimed bool, err error) {
	var (
		status *int
		hdr    []byte
		body   []byte
	)
	if resp != nil {
		if hdr, err = json.Marshal(resp.headers); err != nil {
			return nil, false, fmt.Errorf("idempotency headers: %w", err)
		}
		status, body = &resp.status, resp.body
	}
	err = db.QueryRow(ctx, `
		INSERT INTO idempotency_keys AS k (principal_id, key, request_hash, method, path, locked_until, created_at,
			status, response_headers, response_body, completed_at)
		VALUES ($1, $2, $3, $4, $5, now() + $6::interval, now(), $8, $9, $10, CASE WHEN $8::int IS NOT NULL THEN now() END)
		ON CONFLICT (principal_id, key) DO UPDATE SET
			request_hash = EXCLUDED.request_hash, method = EXCLUDED.method, path = EXCLUDED.path,
			locked_until = EXCLUDED.locked_until, created_at = EXCLUDED.created_at,
			status = EXCLUDED.status, response_headers = EXCLUDED.response_headers,
			response_body = EXCLUDED.response_body, completed_at = EXCLUDED.completed_at
		WHERE k.created_at < now() - $7::interval
		   OR (k.status IS NULL AND k.locked_until < now())
		RETURNING true`,
		k.principal, k.key, k.hash, k.method, k.path, lease.String(), Retention.String(), status, hdr, body).Scan(&claimed)
	if err == nil {
		return nil, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, store.MapError(err, "idempotency key")
	}
	rec, err = scanRecord(db.QueryRow(ctx, `SELECT `+recordColumns+` FROM idempotency_keys WHERE principal_id = $1 AND key = $2`, k.principal, k.key))
	if err != nil {
		return nil, false, store.MapError(err, "idempotency key")
	}
	return rec, false, nil
}

// keyGet returns the key's record while it holds the key (completed
// within Retention, or in flight within its lease), or nil.
func keyGet(ctx context.Context, db store.Executor, k keyed) (*Record, error) {
	rec, err := scanRecord(db.QueryRow(ctx, `SELECT `+recordColumns+` FROM idempotency_keys
		WHERE principal_id = $1 AND key = $2 AND created_at >= now() - $3::interval
		  AND (status IS NOT NULL OR locked_until >= now())`, k.principal, k.key, Retention.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return rec, store.MapError(err, "idempotency key")
}

// keyComplete stores the response of a claimed key.
func keyComplete(ctx context.Context, db store.Executor, k keyed, resp response) error {
	hdr, err := json.Marshal(resp.headers)
	if err != nil {
		return fmt.Errorf("idempotency headers: %w", err)
	}
	_, err = db.Exec(ctx, `
		UPDATE idempotency_keys SET status = $3, response_headers = $4, response_body = $5, completed_at = now()
		WHERE principal_id = $1 AND key = $2 AND status IS NULL`, k.principal, k.key, resp.status, hdr, resp.body)
	return store.MapError(err, "idempotency key")
}

// keyRelease frees a claimed key whose request did not succeed, so a retry
// runs again instead of replaying a refusal that may no longer hold (an
// APPROVAL_REQUIRED before the approval, a 409 before the conflict went).
func keyRelease(ctx context.Context, db store.Executor, k keyed) error {
	_, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE principal_id = $1 AND key = $2 AND status IS NULL`, k.principal, k.key)
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

// Middleware applies the Idempotency-Key semantics to POST requests that
// carry the header; it must run after authentication. streams are the
// routes (Echo paths) whose success is a stream (ADR-0020): their key is
// leased while they run and never stored. Every other request's key is
// claimed and completed in the transaction of its effect (run).
func Middleware(db store.Executor, streams ...string) echo.MiddlewareFunc {
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
			k := keyed{principal: p.UserID, key: key, hash: requestHash(req.Method, req.URL.RequestURI(), body),
				method: req.Method, path: req.URL.RequestURI()}
			if slices.Contains(streams, c.Path()) {
				return runStream(c, next, db, k)
			}
			return run(c, next, db, k)
		}
	}
}

// unit joins a keyed request to its effect's transaction (store.TxHook):
// the transaction is held, uncommitted, until the response is known, and
// the key is written with that response in it, as its last statement
// before COMMIT. A crash before that COMMIT leaves neither the effect nor
// the key; one after it leaves both. A concurrent request with the same
// key waits on the first's row locks or on the key's index entry, and
// then finds the key taken: its own transaction rolls back and it replays
// the first's answer.
type unit struct {
	held pgx.Tx
}

// errSecondTransaction is a handler that began a transaction after the
// one holding its effect: it would not see that one's writes, and might
// wait on its locks.
var errSecondTransaction = errors.New("idempotency: a request began a transaction while its effect's transaction waits to commit")

func (u *unit) Begin(context.Context, pgx.Tx) error {
	if u.held != nil {
		return errSecondTransaction
	}
	return nil
}

func (u *unit) Hold(tx pgx.Tx) { u.held = tx }

func (u *unit) rollback(ctx context.Context) {
	if u.held != nil {
		_ = u.held.Rollback(ctx)
		u.held = nil
	}
}

// complete writes the key with resp in the held transaction and commits
// it; when another request took the key first, it rolls back and returns
// that request's record.
func (u *unit) complete(ctx context.Context, k keyed, resp response) (*Record, error) {
	tx := u.held
	u.held = nil
	rec, claimed, err := keyClaim(ctx, tx, k, 0, &resp)
	if err != nil || !claimed {
		_ = tx.Rollback(ctx)
		return rec, err
	}
	failpoint(StageBeforeCommit, k.key)
	if err := tx.Commit(ctx); err != nil {
		return nil, store.MapError(fmt.Errorf("commit: %w", err), "idempotency key")
	}
	failpoint(StageAfterCommit, k.key)
	return nil, nil
}

// Stage names a moment of completing a key in its transaction.
type Stage string

// The stages Failpoint is called at.
const (
	StageBeforeCommit Stage = "before-commit"
	StageAfterCommit  Stage = "after-commit"
)

// Failpoint, when a test sets it before serving, is called with the key at
// each Stage: a crash test kills the process there (cmd/invoiced).
var Failpoint func(stage Stage, key string)

func failpoint(s Stage, key string) {
	if Failpoint != nil {
		Failpoint(s, key)
	}
}

// run answers a request whose key is known, or runs next with its
// response held back and answers once the key's fate is known. The
// database writes run under context.WithoutCancel: a client hanging up
// cannot stop a decided commit halfway.
func run(c echo.Context, next echo.HandlerFunc, db store.Executor, k keyed) error {
	req := c.Request()
	ctx := context.WithoutCancel(req.Context())
	rec, err := keyGet(ctx, db, k)
	if err != nil {
		return err
	}
	if rec != nil {
		return answerExisting(c, rec, k.hash)
	}

	u := &unit{}
	resp := c.Response()
	w := resp.Writer
	buf := newBuffered(w.Header())
	resp.Writer = buf
	c.SetRequest(req.WithContext(store.WithTxHook(req.Context(), u)))
	func() {
		defer func() {
			if v := recover(); v != nil {
				u.rollback(ctx)
				restore(resp, w)
				c.SetRequest(req)
				panic(v)
			}
		}()
		if err := next(c); err != nil {
			// Write the problem now so the outcome is known here.
			c.Error(err)
		}
	}()
	restore(resp, w)
	c.SetRequest(req)

	switch {
	case u.held != nil && buf.succeeded():
		rec, err = u.complete(ctx, k, buf.response())
	case buf.succeeded():
		// No transaction: a read (a read capability by invoke), stored so
		// that a retry replays it as Stripe does.
		resp := buf.response()
		var claimed bool
		if rec, claimed, err = keyClaim(ctx, db, k, 0, &resp); claimed {
			rec = nil
		}
	default:
		// A refusal is not stored: a retry runs again, as the state that
		// caused it may have changed (an approval granted meanwhile). But
		// a concurrent request with the key may have caused it (the
		// invoice it issued is no longer a draft): then its answer stands.
		u.rollback(ctx)
		rec, err = keyGet(ctx, db, k)
	}
	switch {
	case err != nil:
		return err
	case rec != nil:
		return answerExisting(c, rec, k.hash)
	}
	return buf.writeTo(resp)
}

// restore puts the connection's writer back and forgets what the handler
// wrote into the buffer, so that one answer can be written.
func restore(resp *echo.Response, w http.ResponseWriter) {
	resp.Writer, resp.Committed, resp.Status, resp.Size = w, false, http.StatusOK, 0
}

// buffered holds a response back until the key's transaction commits.
type buffered struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// newBuffered starts from the headers already set (the request id).
func newBuffered(h http.Header) *buffered { return &buffered{header: h.Clone()} }

func (b *buffered) Header() http.Header { return b.header }

func (b *buffered) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *buffered) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// Flush is a no-op: nothing leaves before the commit.
func (b *buffered) Flush() {}

func (b *buffered) succeeded() bool { return b.status >= 200 && b.status <= 299 }

func (b *buffered) response() response {
	hdr := map[string]string{}
	for _, h := range replayedHeaders {
		if v := b.header.Get(h); v != "" {
			hdr[h] = v
		}
	}
	return response{status: b.status, headers: hdr, body: b.body.Bytes()}
}

func (b *buffered) writeTo(resp *echo.Response) error {
	h := resp.Header()
	for k := range h {
		if _, ok := b.header[k]; !ok {
			delete(h, k)
		}
	}
	for k, v := range b.header {
		h[k] = v
	}
	resp.WriteHeader(cmp.Or(b.status, http.StatusOK))
	_, err := resp.Write(b.body.Bytes())
	return err
}

// recorder tees a streaming route's response body so it can be stored
// when it turns out not to be a stream (a refusal never is stored, but a
// JSON success would be). A stream (text/event-stream) is not copied.
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

// runStream runs a streaming route under a leased claim, released when
// the request ends unless its answer was a stored success. A panic
// releases the key too, so a retry runs instead of finding the key in use
// until its lease ends, and then goes on to the Recover middleware.
func runStream(c echo.Context, next echo.HandlerFunc, db store.Executor, k keyed) error {
	ctx := context.WithoutCancel(c.Request().Context())
	rec, claimed, err := keyClaim(ctx, db, k, Lease, nil)
	if err != nil {
		return err
	}
	if !claimed {
		return answerExisting(c, rec, k.hash)
	}
	w := &recorder{ResponseWriter: c.Response().Writer}
	c.Response().Writer = w
	err = func() error {
		defer func() {
			if v := recover(); v != nil {
				_ = keyRelease(ctx, db, k)
				panic(v)
			}
		}()
		return next(c)
	}()
	if err != nil {
		c.Error(err)
	}
	status := c.Response().Status
	if status < 200 || status > 299 || isStream(c.Response().Header()) {
		return keyRelease(ctx, db, k)
	}
	hdr := map[string]string{}
	for _, h := range replayedHeaders {
		if v := c.Response().Header().Get(h); v != "" {
			hdr[h] = v
		}
	}
	return keyComplete(ctx, db, k, response{status: status, headers: hdr, body: w.buf.Bytes()})
}

func answerExisting(c echo.Context, rec *Record, hash string) error {
	if rec.RequestHash != hash {
		return problem.New(http.StatusUnprocessableEntity, CodeKeyReused,
			"this Idempotency-Key was used with a different request in the last 24 hours; use a new key for a new request")
	}
	if rec.Status == nil {
		c.Response().Header().Set("Retry-After", retryAfter)
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
