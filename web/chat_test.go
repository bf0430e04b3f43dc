package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// The chat page is a shell for its script: the conversation, the
// session's CSRF token (the script sends it to /v1 in X-CSRF-Token) and
// the currency table in data attributes, the bundle as an external script
// under the pages' CSP.
func TestChatPageIsForClerksAndAdmins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "carl", identity.RoleClerk)
	b.user(t, "ada", identity.RoleAdmin)
	b.user(t, "alice", identity.RoleApprover)

	for _, who := range []string{"carl", "ada"} {
		br := b.browser(t)
		require.Equal(t, http.StatusSeeOther, br.signIn(who, testPassword).status)
		p := br.do(http.MethodGet, "/chat", nil)
		require.Equal(t, http.StatusOK, p.status, p.body)
		csp := p.header.Get("Content-Security-Policy")
		require.Contains(t, csp, "script-src 'self';")
		require.NotContains(t, csp, "unsafe-eval")
		require.NotContains(t, csp, "unsafe-inline")
		require.Equal(t, "DENY", p.header.Get("X-Frame-Options"))
		require.Regexp(t, `<script src="/static/chat\.js\?v=[0-9a-f]+" defer></script>`, p.body)
		require.NotRegexp(t, `<script>|<script [^s]`, p.body, "no inline script")
		require.Contains(t, p.body, `data-conversation=""`)
		require.Contains(t, p.body, `data-csrf="`+csrfOf(t, p)+`"`)
		require.Contains(t, p.body, `&#34;USD&#34;:2`, "the currency table, attribute-escaped")
		require.Contains(t, p.body, `<a href="/chat" aria-current="page">Chat</a>`)

		// No such conversation: its page would open empty.
		require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/chat/conv_Abc-123", nil).status)
		require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/chat/"+strings.Repeat("x", 129), nil).status)
		require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/chat/a.b", nil).status)
	}

	// An approver following a link to the chat reads where their work
	// is, with the way there; no chat script loads.
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("alice", testPassword).status)
	for _, path := range []string{"/chat", "/chat/conv_Abc-123"} {
		p := br.do(http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, p.status, path)
		require.Contains(t, p.body, `<h1>Your work is in the inbox</h1>`, path)
		require.Contains(t, p.body, `waits for you in the <a href="/inbox">inbox</a>.</p>`, path)
		require.NotContains(t, p.body, "Forbidden", path)
		require.NotContains(t, p.body, "chat.js", path)
		require.NotContains(t, p.body, "data-csrf", path)
	}
	require.NotContains(t, br.do(http.MethodGet, "/inbox", nil).body, `href="/chat"`, "an approver's menu has no chat")

	p := b.browser(t).do(http.MethodGet, "/chat/conv_Abc-123", nil)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/login?next=%2Fchat%2Fconv_Abc-123", p.header.Get("Location"))
}

func TestChatBundleIsServedAsAScript(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "carl", identity.RoleClerk)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("carl", testPassword).status)
	page := br.do(http.MethodGet, "/chat", nil)
	for _, re := range []string{`src="(/static/chat\.js\?v=[0-9a-f]+)"`, `href="(/static/chat\.css\?v=[0-9a-f]+)"`} {
		m := regexp.MustCompile(re).FindStringSubmatch(page.body)
		require.NotNil(t, m, re)
		f := br.do(http.MethodGet, m[1], nil)
		require.Equal(t, http.StatusOK, f.status)
		require.Contains(t, f.header.Get("Cache-Control"), "immutable")
		require.Equal(t, "nosniff", f.header.Get("X-Content-Type-Options"))
		if strings.HasSuffix(strings.SplitN(m[1], "?", 2)[0], ".js") {
			require.Contains(t, f.header.Get("Content-Type"), "javascript")
			require.Greater(t, len(f.body), 100_000, "the bundle holds React and the AI SDK")
		}
	}
}

// TestChatPageOpensOnlyTheUsersConversations: /chat/{id} opens a
// conversation of the signed-in user's; another user's, an admin's
// asking included, is the 404 GET /v1/conversations/{id} answers, and
// shows nothing of it.
func TestChatPageOpensOnlyTheUsersConversations(t *testing.T) {
	t.Parallel()
	sc, err := model.NewScripted(model.Script{Default: []model.ScriptStep{{Text: "Hello."}}})
	require.NoError(t, err)
	b := &bundle{h: apptest.New(t, apptest.Options{Config: app.Config{Model: sc}})}
	b.user(t, "carl", identity.RoleClerk)
	b.user(t, "cleo", identity.RoleClerk)
	b.user(t, "ada", identity.RoleAdmin)
	chat := func(username, id string) {
		u, err := identity.UserGetByUsername(context.Background(), b.h.Pool, username)
		require.NoError(t, err)
		token, err := identity.TokenCreate(context.Background(), b.h.Pool, u.ID, "chat")
		require.NoError(t, err)
		r := b.h.Do(t, http.MethodPost, "/v1/chat", token,
			`{"id":"`+id+`","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Hi."}]}]}`)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		r = b.h.Do(t, http.MethodGet, "/v1/conversations/"+id, token, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	}
	chat("carl", "conv_carl-1")
	chat("ada", "conv_ada-1")

	carl := b.browser(t)
	require.Equal(t, http.StatusSeeOther, carl.signIn("carl", testPassword).status)
	p := carl.do(http.MethodGet, "/chat/conv_carl-1", nil)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `data-conversation="conv_carl-1"`)

	for who, id := range map[string]string{"cleo": "conv_carl-1", "ada": "conv_carl-1", "carl": "conv_ada-1"} {
		br := b.browser(t)
		require.Equal(t, http.StatusSeeOther, br.signIn(who, testPassword).status)
		p := br.do(http.MethodGet, "/chat/"+id, nil)
		require.Equal(t, http.StatusNotFound, p.status, "%s opening %s: %s", who, id, p.body)
		require.NotContains(t, p.body, "data-conversation", "%s opening %s", who, id)
		require.NotContains(t, p.body, id, "%s opening %s", who, id)
	}
}
