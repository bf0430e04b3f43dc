package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

// An admin deciding a request an agent raised can read the conversation
// it was raised in; an approver cannot, and a request made elsewhere has
// no conversation.
func TestAdminReadsTheConversationBehindARequest(t *testing.T) {
	t.Parallel()
	b, _, _ := setupChat(t)
	b.user(t, "ada", identity.RoleAdmin)
	clerk, err := identity.UserGetByUsername(context.Background(), b.h.Pool, "carl")
	require.NoError(t, err)
	token, err := identity.TokenCreate(context.Background(), b.h.Pool, clerk.ID, "chat")
	require.NoError(t, err)

	req, err := http.NewRequest(http.MethodPost, b.h.URL+"/v1/chat", strings.NewReader(
		`{"id":"conv-ada","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Please issue the Globex draft."}]}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	stream, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(stream))
	var approvalID string
	require.NoError(t, b.h.Pool.QueryRow(context.Background(),
		`SELECT id FROM approval_requests WHERE requested_via = 'agent:conv-ada'`).Scan(&approvalID))

	admin := b.browser(t)
	require.Equal(t, http.StatusSeeOther, admin.signIn("ada", testPassword).status)
	p := admin.do(http.MethodGet, "/approvals/"+approvalID, nil)
	require.Contains(t, p.body, `href="/approvals/`+approvalID+`/conversation" id="read-conversation">Read the conversation</a>`)
	p = admin.do(http.MethodGet, "/approvals/"+approvalID+"/conversation", nil)
	require.Equal(t, http.StatusOK, p.status, p.body)
	for _, want := range []string{
		"Carl Clerk talked to the assistant here",
		`<p class="transcript-text">Please issue the Globex draft.</p>`,
		"<code>issue-invoice</code>",
		`Raised approval request <a href="/approvals/` + approvalID + `">`,
		"Issuing needs an approver&#39;s decision; the request is waiting.",
	} {
		require.Contains(t, p.body, want)
	}

	approver := b.browser(t)
	require.Equal(t, http.StatusSeeOther, approver.signIn("alice", testPassword).status)
	require.NotContains(t, approver.do(http.MethodGet, "/approvals/"+approvalID, nil).body, "read-conversation")
	require.Equal(t, http.StatusForbidden, approver.do(http.MethodGet, "/approvals/"+approvalID+"/conversation", nil).status)

	rest := b.request(t, clerk, capability.PathREST)
	require.Equal(t, http.StatusNotFound, admin.do(http.MethodGet, "/approvals/"+rest.String()+"/conversation", nil).status)
}
