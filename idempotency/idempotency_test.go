package idempotency_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/idempotency"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

type bundle struct {
	ctx          context.Context
	h            *apptest.Harness
	alice, bob   string
	aliceID      string
	customerBody map[string]any
}

func setup(t *testing.T) bundle {
	t.Helper()
	h := apptest.New(t, apptest.Options{})
	a, alice := h.User(t, "alice", identity.RoleClerk)
	_, bob := h.User(t, "bob", identity.RoleClerk)
	return bundle{ctx: context.Background(), h: h, alice: alice, bob: bob, aliceID: a.ID.String(),
		customerBody: map[string]any{"name": "Acme", "currency": "EUR"}}
}

func (b bundle) customers(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(*) FROM customers`).Scan(&n))
	return n
}

func id(t *testing.T, r *apptest.Response) string {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m["id"].(string)
}

func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusCreated, first.StatusCode, "%s", first.Body)
	require.Empty(t, first.Header.Get(idempotency.HeaderReplayed))

	again := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusCreated, again.StatusCode)
	require.Equal(t, "true", again.Header.Get(idempotency.HeaderReplayed))
	require.Equal(t, first.Body, again.Body)
	require.Equal(t, first.Header.Get("Location"), again.Header.Get("Location"))
	require.Equal(t, first.Header.Get("ETag"), again.Header.Get("ETag"))
	require.Equal(t, first.Header.Get("Content-Type"), again.Header.Get("Content-Type"))
	require.Equal(t, 1, b.customers(t))

	// Same key, other body: refused, nothing written.
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, map[string]any{"name": "Other", "currency": "EUR"}, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	require.Equal(t, idempotency.CodeKeyReused, r.Problem(t)["code"])
	// Same key, same body, other path: also another request.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices", b.alice, b.customerBody, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	require.Equal(t, 1, b.customers(t))

	// Keys are per principal: bob's k1 is his own request.
	r = b.h.Do(t, http.MethodPost, "/v1/customers", b.bob, b.customerBody, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusCreated, r.StatusCode)
	require.Empty(t, r.Header.Get(idempotency.HeaderReplayed))
	require.NotEqual(t, id(t, first), id(t, r))
	require.Equal(t, 2, b.customers(t))

	// Without a key every POST is a new request.
	b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody)
	b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody)
	require.Equal(t, 4, b.customers(t))
}

func TestFailuresAreNotStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A refusal is not replayed: the retry runs again (the state that
	// caused it may have changed, e.g. an approval granted meanwhile).
	bad := map[string]any{"name": "Acme", "currency": "XYZ"}
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, bad, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	require.Equal(t, "VALIDATION_FAILED", r.Problem(t)["code"])
	r = b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	require.Equal(t, 1, b.customers(t))
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", "old")
	require.Equal(t, http.StatusCreated, r.StatusCode)
	_, err := b.h.Pool.Exec(b.ctx, `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute'`)
	require.NoError(t, err)
	// After 24 h the key is free again, even for another body.
	r = b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, map[string]any{"name": "New", "currency": "EUR"}, "Idempotency-Key", "old")
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	require.Empty(t, r.Header.Get(idempotency.HeaderReplayed))
	require.Equal(t, 2, b.customers(t))

	_, err = b.h.Pool.Exec(b.ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours'`)
	require.NoError(t, err)
	n, err := idempotency.KeySweep(b.ctx, b.h.Pool)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}

func TestAbandonedKeyIsReclaimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// An in-flight record whose lease ran out (its replica died).
	_, err := b.h.Pool.Exec(b.ctx, `INSERT INTO idempotency_keys (principal_id, key, request_hash, method, path, locked_until)
		VALUES ($1, 'stuck', 'x', 'POST', '/v1/customers', now() - interval '1 second')`, b.aliceID)
	require.NoError(t, err)
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", "stuck")
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)

	// One still leased is in use.
	_, err = b.h.Pool.Exec(b.ctx, `INSERT INTO idempotency_keys (principal_id, key, request_hash, method, path, locked_until)
		VALUES ($1, 'busy', $2, 'POST', '/v1/customers', now() + interval '1 minute')`, b.aliceID, "other")
	require.NoError(t, err)
	r = b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", "busy")
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode) // different fingerprint

	// Same fingerprint while leased: 409, retry later.
	sum := sha256.Sum256([]byte("POST\n/v1/customers\n" + `{"currency":"EUR","name":"Acme"}`))
	_, err = b.h.Pool.Exec(b.ctx, `INSERT INTO idempotency_keys (principal_id, key, request_hash, method, path, locked_until)
		VALUES ($1, 'busy2', $2, 'POST', '/v1/customers', now() + interval '1 minute')`, b.aliceID, hex.EncodeToString(sum[:]))
	require.NoError(t, err)
	r = b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", "busy2")
	require.Equal(t, http.StatusConflict, r.StatusCode, "%s", r.Body)
	require.Equal(t, idempotency.CodeKeyInUse, r.Problem(t)["code"])
	require.Equal(t, "1", r.Header.Get("Retry-After"), "the key is held by a running request: retry shortly")
	require.Equal(t, 1, b.customers(t))
}

func TestBadKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'k'
	}
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", string(long))
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Equal(t, idempotency.CodeKeyInvalid, r.Problem(t)["code"])
	require.Zero(t, b.customers(t))
}

// An Idempotency-Key header sent empty is a client that meant to send a
// key and lost it (an unset variable): running the request without the
// protection it asked for could make the effect twice, so it is refused.
func TestEmptyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, key := range []string{"", " "} {
		r := b.h.Do(t, http.MethodPost, "/v1/customers", b.alice, b.customerBody, "Idempotency-Key", key)
		require.Equal(t, http.StatusBadRequest, r.StatusCode, "%q: %s", key, r.Body)
		p := r.Problem(t)
		require.Equal(t, idempotency.CodeKeyInvalid, p["code"])
		require.Contains(t, p["detail"], "Idempotency-Key")
		require.Zero(t, b.customers(t))
	}
	req, err := http.NewRequest(http.MethodPost, b.h.URL+"/v1/customers", strings.NewReader(`{"name":"Acme","currency":"EUR"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.alice)
	req.Header["Idempotency-Key"] = []string{"k1", "k2"}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "two keys")
	require.Zero(t, b.customers(t))
}

// TestConcurrentSameKey: 64 concurrent requests with one key make one
// effect, and every other answer is a replay of its response, byte for
// byte: a duplicate waits for the first to commit (on the key's index
// entry, or on the invoice's row lock the payment takes) and then replays.
func TestConcurrentSameKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{})
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		status     int
		effects    func() int
	}{
		{"create a customer", "/v1/customers", b.customerBody, http.StatusCreated, func() int { return b.customers(t) }},
		{"record a payment", "/v1/invoices/" + inv.ID.String() + "/payments",
			map[string]any{"amount": 1000, "currency": "EUR", "method": "bank_transfer", "received_on": time.Now().UTC().Format(time.DateOnly)}, http.StatusCreated,
			func() int { return b.count(t, `SELECT count(*) FROM payments WHERE invoice_id = $1`, inv.ID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 64
			before := tc.effects()
			answers := make([]*apptest.Response, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					answers[i] = b.h.Do(t, http.MethodPost, tc.path, b.alice, tc.body, "Idempotency-Key", "race "+tc.name)
				}()
			}
			close(start)
			wg.Wait()
			original := 0
			for _, r := range answers {
				require.Equal(t, tc.status, r.StatusCode, "%s", r.Body)
				require.Equal(t, answers[0].Body, r.Body, "every answer is the one response")
				if r.Header.Get(idempotency.HeaderReplayed) != "true" {
					original++
				}
			}
			require.Equal(t, 1, original, "exactly one response is the original")
			require.Equal(t, before+1, tc.effects(), "one effect")
		})
	}
}

func (b bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}
