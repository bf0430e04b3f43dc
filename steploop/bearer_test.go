package steploop_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

// POST /v1/chat authenticates a bearer token in the statement that opens
// the turn (ADR-0011 §15). A token that does not authenticate, or whose
// holder's role may not chat, is refused exactly as by the lookup other
// routes make: 401 or 403 as problem+json, whatever else the request
// gets wrong, on a new or an existing conversation, in either request
// mode, with or without an Idempotency-Key; and nothing is written.
func TestChatBearerRefusedByTheOpeningStatementWritesNothing(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	scriptInto(t, rec)
	ctx := context.Background()
	_, owner := h.User(t, "owner", identity.RoleClerk)
	_, revoked := h.User(t, "revoked", identity.RoleClerk)
	require.NoError(t, identity.TokenRevoke(ctx, h.Pool, revoked))
	gone, disabled := h.User(t, "gone", identity.RoleClerk)
	require.NoError(t, identity.UserSetDisabled(ctx, h.Pool, gone.ID, true))
	ap, approver := h.User(t, "approver", identity.RoleApprover)
	r := h.Do(t, http.MethodPost, "/v1/chat", owner, chatBody("br-old", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	callers := []struct {
		name, token string
		status      int
		code        string
	}{
		{"unknown token", "inv_" + "0123456789abcdef0123456789abcdef", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"malformed token", "not-one-of-ours", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"revoked token", revoked, http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"disabled user", disabled, http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"approver", approver, http.StatusForbidden, "FORBIDDEN"},
	}
	asst := map[string]any{"id": "a-x", "role": "assistant", "parts": []any{}}
	requests := []struct {
		name    string
		body    any
		headers []string
		// The key's form is checked before the route's role, on every
		// route: an approver learns only that its key is malformed.
		keyFirst bool
	}{
		{"new id, full history", chatBody("br-new", userMsg("u1", "hello")), nil, false},
		{"new id, last message", map[string]any{"id": "br-new", "message": userMsg("u1", "hello")}, nil, false},
		{"existing id, last message", map[string]any{"id": "br-old", "message": userMsg("u9", "more")}, nil, false},
		{"existing id, full history", chatBody("br-old", userMsg("u1", "hello"), asst, userMsg("u9", "more")), nil, false},
		{"body that does not parse", `{"id": "br-new", "messages": [`, nil, false},
		{"unknown member", map[string]any{"id": "br-new", "message": userMsg("u1", "hello"), "extra": 1}, nil, false},
		{"idempotency key", chatBody("br-new", userMsg("u1", "hello")), []string{"Idempotency-Key", "br-key"}, false},
		{"two idempotency keys", chatBody("br-new", userMsg("u1", "hello")), []string{"Idempotency-Key", "a", "Idempotency-Key", "b"}, true},
	}
	count := func() string {
		return fmt.Sprint(
			countRows(t, h, `SELECT count(*) FROM conversations`),
			countRows(t, h, `SELECT count(*) FROM conversation_messages`),
			countRows(t, h, `SELECT count(*) FROM chat_runs`),
			countRows(t, h, `SELECT count(*) FROM conversations WHERE busy_token IS NOT NULL`),
			countRows(t, h, `SELECT count(*) FROM idempotency_keys`),
			// An approver's token authenticates, and its use is recorded
			// as on any route that then refuses the role.
			countRows(t, h, `SELECT count(*) FROM api_tokens WHERE last_used_at IS NOT NULL AND user_id <> $1`, ap.ID),
		)
	}
	before := count()
	for _, c := range callers {
		for _, rq := range requests {
			status, code := c.status, c.code
			if rq.keyFirst && c.status == http.StatusForbidden {
				status, code = http.StatusBadRequest, "IDEMPOTENCY_KEY_INVALID"
			}
			r := h.Do(t, http.MethodPost, "/v1/chat", c.token, rq.body, rq.headers...)
			require.Equal(t, status, r.StatusCode, "%s, %s: %s", c.name, rq.name, r.Body)
			require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"), "%s, %s", c.name, rq.name)
			require.Equal(t, code, r.Problem(t)["code"], "%s, %s", c.name, rq.name)
			require.Equal(t, before, count(), "%s, %s: nothing written", c.name, rq.name)
		}
	}
	require.Equal(t, 0, countRows(t, h, `SELECT count(*) FROM conversations WHERE id = 'br-new'`))
}

// The statement that authenticates the token records its use as the
// lookup does (last_used_at, at most once a minute), and what it
// authenticated is the principal of the rest of the request: the turn
// belongs to the token's holder, who alone can read it.
func TestChatBearerOpeningStatementRecordsUseAndOwner(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	scriptInto(t, rec)
	ctx := context.Background()
	u, tok := h.User(t, "ck", identity.RoleClerk)
	_, other := h.User(t, "other", identity.RoleClerk)
	lastUsed := func() (used bool) {
		require.NoError(t, h.Pool.QueryRow(ctx, `SELECT last_used_at IS NOT NULL FROM api_tokens WHERE user_id = $1`, u.ID).Scan(&used))
		return used
	}
	require.False(t, lastUsed())
	r := h.Do(t, http.MethodPost, "/v1/chat", tok, chatBody("br-use", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	require.True(t, lastUsed(), "a new conversation records the token's use")
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM conversations WHERE id = 'br-use' AND owner_id = $1`, u.ID))

	_, err := h.Pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = NULL WHERE user_id = $1`, u.ID)
	require.NoError(t, err)
	r = h.Do(t, http.MethodPost, "/v1/chat", tok, map[string]any{"id": "br-use", "message": userMsg("u2", "again")})
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	require.True(t, lastUsed(), "the next turn records it too")

	r = h.Do(t, http.MethodGet, "/v1/conversations/br-use", tok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodGet, "/v1/conversations/br-use", other, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodPost, "/v1/chat", other, map[string]any{"id": "br-use", "message": userMsg("u3", "mine?")})
	require.Equal(t, http.StatusNotFound, r.StatusCode, string(r.Body))
}

// Many requests open the same new conversation at once, half of them with
// a revoked token: exactly one valid request wins it, the others that
// authenticate are refused as conflicts or busy, every revoked one is
// 401, and the conversation is the valid holder's with one user message.
func TestChatBearerConcurrentOpensOneWinner(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	scriptInto(t, rec)
	ctx := context.Background()
	u, tok := h.User(t, "ck", identity.RoleClerk)
	_, revoked := h.User(t, "rv", identity.RoleClerk)
	require.NoError(t, identity.TokenRevoke(ctx, h.Pool, revoked))

	const n = 16
	status := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := tok
			if i%2 == 1 {
				token = revoked
			}
			status[i] = h.Do(t, http.MethodPost, "/v1/chat", token, map[string]any{"id": "br-race", "message": userMsg("u1", "hello")}).StatusCode
		}()
	}
	wg.Wait()
	won := 0
	for i, s := range status {
		if i%2 == 1 {
			require.Equal(t, http.StatusUnauthorized, s, "request %d (revoked)", i)
			continue
		}
		if s == http.StatusOK {
			won++
			continue
		}
		require.Equal(t, http.StatusConflict, s, "request %d", i)
	}
	require.Equal(t, 1, won, "%v", status)
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM conversations WHERE id = 'br-race' AND owner_id = $1`, u.ID))
	require.Equal(t, 1, countRows(t, h, `SELECT count(*) FROM conversation_messages WHERE conversation_id = 'br-race' AND role = 'user'`))
}
