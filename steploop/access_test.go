package steploop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

// chatBody is a DefaultChatTransport body for conversation id.
func chatBody(id string, msgs ...any) map[string]any {
	return map[string]any{"id": id, "messages": msgs, "trigger": "submit-message"}
}

// Cookie auth: POST /v1/chat without (or with a wrong) X-CSRF-Token is
// refused; a logged-out session or disabled user can neither read nor
// continue.
func TestChatAccessCookieChatCSRFAndLogout(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	scriptInto(t, rec)
	ctx := context.Background()
	clerk, _ := h.User(t, "ck", identity.RoleClerk)
	sid, sess, err := web.SessionCreate(ctx, h.Pool, clerk.ID, time.Hour)
	require.NoError(t, err)
	cookie := web.SessionCookie + "=" + sid

	r := h.Do(t, http.MethodPost, "/v1/chat", "", chatBody("acc-ck", userMsg("u1", "hello")), "Cookie", cookie)
	require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
	require.Equal(t, "application/problem+json", strings.Split(r.Header.Get("Content-Type"), ";")[0])
	r = h.Do(t, http.MethodPost, "/v1/chat", "", chatBody("acc-ck", userMsg("u1", "hello")), "Cookie", cookie, "X-CSRF-Token", "x"+sess.CSRFToken)
	require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
	// A method override must not turn a GET into a CSRF-free POST.
	r = h.Do(t, http.MethodGet, "/v1/chat", "", nil, "Cookie", cookie, "X-HTTP-Method-Override", "POST")
	require.NotEqual(t, http.StatusOK, r.StatusCode, string(r.Body))
	require.Equal(t, 0, countRows(t, h, `SELECT count(*) FROM conversations`))

	r = h.Do(t, http.MethodPost, "/v1/chat", "", chatBody("acc-ck", userMsg("u1", "hello")), "Cookie", cookie, "X-CSRF-Token", sess.CSRFToken)
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodGet, "/v1/conversations/acc-ck", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	require.NoError(t, web.SessionDelete(ctx, h.Pool, sid))
	r = h.Do(t, http.MethodGet, "/v1/conversations/acc-ck", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodPost, "/v1/chat", "", chatBody("acc-ck", userMsg("u2", "again")), "Cookie", cookie, "X-CSRF-Token", sess.CSRFToken)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))

	sid2, sess2, err := web.SessionCreate(ctx, h.Pool, clerk.ID, time.Hour)
	require.NoError(t, err)
	require.NoError(t, identity.UserSetDisabled(ctx, h.Pool, clerk.ID, true))
	c2 := web.SessionCookie + "=" + sid2
	r = h.Do(t, http.MethodGet, "/v1/conversations/acc-ck", "", nil, "Cookie", c2)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodPost, "/v1/chat", "", chatBody("acc-ck", userMsg("u2", "again")), "Cookie", c2, "X-CSRF-Token", sess2.CSRFToken)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))
}

func TestChatAccessRevokedTokenCannotReadOrContinue(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	scriptInto(t, rec)
	ctx := context.Background()
	_, tok := h.User(t, "ck", identity.RoleClerk)
	r := h.Do(t, http.MethodPost, "/v1/chat", tok, chatBody("acc-rv", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	require.NoError(t, identity.TokenRevoke(ctx, h.Pool, tok))
	r = h.Do(t, http.MethodGet, "/v1/conversations/acc-rv", tok, nil)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodPost, "/v1/chat", tok, chatBody("acc-rv", userMsg("u2", "again")))
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))
}

// Another principal's conversation (idle or busy) and a missing one look
// the same on GET; on POST another's is 404 (never CONVERSATION_BUSY),
// as problem+json.
func TestChatAccessOtherPrincipalsConversationIsIndistinguishable(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	scriptInto(t, rec)
	_, a := h.User(t, "alice", identity.RoleClerk)
	_, b := h.User(t, "bob", identity.RoleClerk)
	r := h.Do(t, http.MethodPost, "/v1/chat", a, chatBody("acc-a", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

	strip := func(r *apptest.Response) map[string]any {
		m := r.Problem(t)
		delete(m, "instance")
		delete(m, "request_id")
		return m
	}
	other := h.Do(t, http.MethodGet, "/v1/conversations/acc-a", b, nil)
	missing := h.Do(t, http.MethodGet, "/v1/conversations/acc-none", b, nil)
	require.Equal(t, http.StatusNotFound, other.StatusCode)
	require.Equal(t, missing.StatusCode, other.StatusCode)
	require.Equal(t, strip(missing), strip(other))

	// Busy conversation of A: B must still see 404, not 409.
	_, err := h.Pool.Exec(context.Background(), `UPDATE conversations SET busy_token = gen_random_uuid(), busy_until = now() + interval '5 minutes' WHERE id = 'acc-a'`)
	require.NoError(t, err)
	for _, msgs := range [][]any{
		{userMsg("u1", "hello")},
		{userMsg("u1", "hello"), map[string]any{"id": "x", "role": "assistant", "parts": []any{}}, userMsg("u2", "hi")},
	} {
		r = h.Do(t, http.MethodPost, "/v1/chat", b, chatBody("acc-a", msgs...))
		require.Equal(t, http.StatusNotFound, r.StatusCode, string(r.Body))
		require.Equal(t, "NOT_FOUND", strip(r)["code"])
	}
	r = h.Do(t, http.MethodGet, "/v1/conversations/acc-a", b, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	// A's conversation still exists and is untouched.
	r = h.Do(t, http.MethodGet, "/v1/conversations/acc-a", a, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	var v struct{ Messages []json.RawMessage }
	r.JSON(t, &v)
	require.Len(t, v.Messages, 2)
}

// GET /v1/conversations/{id} must not carry server-only members.
func TestChatAccessConversationViewHidesServerOnlyMembers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.chat(t, b.Token, body("acc-hide", userMsg("u1", "broken")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	var stored int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM conversation_messages WHERE conversation_id = 'acc-hide' AND parts::text LIKE '%x_model_result%'`).Scan(&stored))
	require.Positive(t, stored, "test premise: the server stored a model result")
	req, _ := http.NewRequest(http.MethodGet, b.URL+"/v1/conversations/acc-hide", nil)
	req.Header.Set("Authorization", "Bearer "+b.Token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	require.NotContains(t, string(raw), "x_model_result")
	require.NotContains(t, string(res.Body), "x_model_result")
}

// The client resends the whole conversation with each message, so one
// past the body limit (1 MiB) cannot be continued: the 413 names the limit
// and the setting that raises it.
func TestChatAccessConversationPastTheBodyLimitNamesIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := strings.Repeat("a", 60<<10)
	var msgs []any
	for i := range 18 {
		msgs = append(msgs, userMsg(fmt.Sprintf("u%d", i), big), map[string]any{"id": fmt.Sprintf("a%d", i), "role": "assistant", "parts": []any{}})
	}
	res := b.chat(t, b.Token, body("too-long", append(msgs, userMsg("last", "hi"))...))
	require.Equal(t, http.StatusRequestEntityTooLarge, res.Status, string(res.Body))
	require.Equal(t, "BODY_TOO_LARGE", problemCode(t, res.Body))
	require.Contains(t, string(res.Body), "1M")
	require.Contains(t, string(res.Body), "INVOICED_BODY_LIMIT")
}

// The run routes and the conversation list follow the chat's rules: an
// approver is 403 on each, anonymous requests are 401, and with the
// inbox's session cookie the stop route (a POST) needs the session's CSRF
// token while the stream and the list (GETs) do not.
func TestChatAccessRunRoutesFollowTheChatRules(t *testing.T) {
	t.Parallel()
	h, rec, _ := setupGates(t)
	scriptInto(t, rec)
	ctx := context.Background()
	_, approver := h.User(t, "ap", identity.RoleApprover)
	clerk, clerkToken := h.User(t, "ck", identity.RoleClerk)
	r := h.Do(t, http.MethodPost, "/v1/chat", clerkToken, chatBody("acc-runs", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	routes := []struct{ method, path string }{
		{http.MethodGet, "/v1/chat/acc-runs/stream"}, {http.MethodPost, "/v1/chat/acc-runs/stop"}, {http.MethodGet, "/v1/conversations"},
	}
	for _, rt := range routes {
		r := h.Do(t, rt.method, rt.path, approver, nil)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "%s %s: %s", rt.method, rt.path, r.Body)
		r = h.Do(t, rt.method, rt.path, "", nil)
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, "%s %s: %s", rt.method, rt.path, r.Body)
	}
	sid, sess, err := web.SessionCreate(ctx, h.Pool, clerk.ID, time.Hour)
	require.NoError(t, err)
	cookie := web.SessionCookie + "=" + sid
	r = h.Do(t, http.MethodPost, "/v1/chat/acc-runs/stop", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
	r = h.Do(t, http.MethodPost, "/v1/chat/acc-runs/stop", "", nil, "Cookie", cookie, "X-CSRF-Token", sess.CSRFToken)
	require.Equal(t, http.StatusNoContent, r.StatusCode, "nothing runs: %s", r.Body)
	r = h.Do(t, http.MethodGet, "/v1/chat/acc-runs/stream", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusOK, r.StatusCode, "the run just ended: it is replayed")
	require.Contains(t, string(r.Body), "data: [DONE]")
	r = h.Do(t, http.MethodGet, "/v1/conversations", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	require.Contains(t, string(r.Body), `"id":"acc-runs"`)
}
