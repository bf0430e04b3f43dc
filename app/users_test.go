package app_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/accounts"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

func (g *gated) userID(t *testing.T, name string) string {
	t.Helper()
	u, err := identity.UserGetByUsername(g.ctx, g.h.Pool, name)
	require.NoError(t, err)
	return u.ID.String()
}

// patchUser sends PATCH /v1/users/{id} as the admin.
func (g *gated) patchUser(t *testing.T, id string, body any, headers ...string) *apptest.Response {
	t.Helper()
	return g.h.Do(t, "PATCH", "/v1/users/"+id, g.adminTok, body, headers...)
}

// /v1/users and /v1/tokens are for admins: every other role is 403, no
// credential 401, and nothing is written.
func TestUsersRoutesAreForAdminsOnly(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	bob := g.userID(t, "bob")
	tok := g.tokenID(t, bob)
	events := g.count(t, `SELECT count(*) FROM audit_events`)
	routes := []struct{ method, path string }{
		{"GET", "/v1/users"},
		{"GET", "/v1/users/" + bob},
		{"PATCH", "/v1/users/" + bob},
		{"GET", "/v1/users/" + bob + "/tokens"},
		{"POST", "/v1/tokens/" + tok + "/revoke"},
	}
	for _, r := range routes {
		for _, who := range []string{g.clerkTok, g.bobTok} {
			refusedWith(t, g.h.Do(t, r.method, r.path, who, map[string]any{"role": "admin"}), http.StatusForbidden, problem.CodeForbidden)
		}
		refusedWith(t, g.h.Do(t, r.method, r.path, "", nil), http.StatusUnauthorized, problem.CodeUnauthenticated)
	}
	require.Equal(t, events, g.count(t, `SELECT count(*) FROM audit_events`))
	require.Equal(t, 0, g.count(t, `SELECT count(*) FROM api_tokens WHERE revoked_at IS NOT NULL`))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM users WHERE role = 'admin'`))
}

func (g *gated) tokenID(t *testing.T, userID string) string {
	t.Helper()
	var list struct {
		Data []identity.Token `json:"data"`
	}
	resp := g.h.Do(t, "GET", "/v1/users/"+userID+"/tokens", g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &list)
	require.NotEmpty(t, list.Data)
	return list.Data[0].ID.String()
}

// An admin lists, reads and changes users over HTTP with ETags; a
// disabled user's token is 401 on the next request and works again once
// they are enabled.
func TestUsersAdministeredOverHTTP(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	var list struct {
		Data    []identity.User `json:"data"`
		HasMore bool            `json:"has_more"`
	}
	resp := g.h.Do(t, "GET", "/v1/users?limit=3", g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &list)
	require.Len(t, list.Data, 3)
	require.True(t, list.HasMore)
	require.Equal(t, "ada", list.Data[0].Username, "newest first")

	bob := g.userID(t, "bob")
	resp = g.h.Do(t, "GET", "/v1/users/"+bob, g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	tag := resp.Header.Get("ETag")
	require.Equal(t, `"1"`, tag)

	resp = g.patchUser(t, bob, map[string]any{"disabled": true}, "If-Match", `"7"`)
	refusedWith(t, resp, http.StatusPreconditionFailed, etag.CodeVersionMismatch)
	resp = g.patchUser(t, bob, map[string]any{"disabled": true, "email": "bob@example.com"}, "If-Match", tag)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, `"2"`, resp.Header.Get("ETag"))
	var u identity.User
	resp.JSON(t, &u)
	require.True(t, u.Disabled)
	require.Equal(t, "bob@example.com", *u.Email)
	refusedWith(t, g.h.Do(t, "GET", "/v1/me", g.bobTok, nil), http.StatusUnauthorized, problem.CodeUnauthenticated)

	resp = g.patchUser(t, bob, map[string]any{"disabled": false, "email": nil})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &u)
	require.Nil(t, u.Email)
	require.Equal(t, http.StatusOK, g.h.Do(t, "GET", "/v1/me", g.bobTok, nil).StatusCode, "enabled again, the token works")

	resp = g.patchUser(t, g.userID(t, "ada"), map[string]any{"role": "approver"})
	p := resp.Problem(t)
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, accounts.CodeLastAdmin, p["code"])
	require.Contains(t, p["detail"], "last enabled admin")
}

// Each bad request is a problem naming what is wrong, and writes nothing.
func TestUsersPatchRefusesBadRequestsWritingNothing(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	bob := g.userID(t, "bob")
	resp := g.patchUser(t, g.userID(t, "carol"), map[string]any{"email": "carol@example.com"})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	events := g.count(t, `SELECT count(*) FROM audit_events`)
	for name, tc := range map[string]struct {
		body   any
		status int
		code   string
		field  string
	}{
		"role null":       {`{"role": null}`, 422, problem.CodeValidation, "role"},
		"role unknown":    {`{"role": "root"}`, 422, problem.CodeValidation, "role"},
		"role a number":   {`{"role": 3}`, 422, problem.CodeValidation, "role"},
		"disabled string": {`{"disabled": "yes"}`, 422, problem.CodeValidation, "disabled"},
		"email number":    {`{"email": 5}`, 422, problem.CodeValidation, "email"},
		"email invalid":   {`{"email": "bob at example"}`, 422, problem.CodeValidation, "email"},
		"email override":  {`{"email": "moc.elpmaxe@bob\u202e"}`, 422, problem.CodeValidation, "email"},
		"email isolate":   {`{"email": "bob\u2066@example.com"}`, 422, problem.CodeValidation, "email"},
		"email invisible": {`{"email": "bob\u200b@example.com"}`, 422, problem.CodeValidation, "email"},
		"email joiner":    {`{"email": "b\u200dob@example.com"}`, 422, problem.CodeValidation, "email"},
		"email taken":     {`{"email": "Carol@Example.com"}`, 409, problem.CodeConflict, ""},
		"unknown field":   {`{"password": "hunter2hunter2"}`, 422, problem.CodeValidation, "password"},
		"username":        {`{"username": "robert"}`, 422, problem.CodeValidation, "username"},
		"not JSON":        {`{"role":`, 400, problem.CodeMalformedJSON, ""},
		"two values":      {`{} {}`, 400, problem.CodeMalformedJSON, ""},
		"null body":       {`null`, 422, problem.CodeValidation, "body"},
		"array body":      {`[{"role": "clerk"}]`, 422, problem.CodeValidation, "body"},
		"string body":     {`"clerk"`, 422, problem.CodeValidation, "body"},
		"duplicate key":   {`{"role": "clerk", "role": "admin"}`, 422, problem.CodeValidation, "role"},
		"not UTF-8":       {[]byte("{\"display_name\": \"B\xffb\"}"), 422, problem.CodeValidation, "body"},
		"NUL in name":     {`{"display_name": "Bob\u0000"}`, 422, problem.CodeValidation, "display_name"},
	} {
		resp := g.patchUser(t, bob, tc.body)
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", name, resp.Body)
		p := resp.Problem(t)
		require.Equal(t, tc.code, p["code"], name)
		if tc.field != "" {
			require.Equal(t, tc.field, p["errors"].([]any)[0].(map[string]any)["field"], name)
		}
	}
	for _, path := range []string{"/v1/users/not-a-uuid", "/v1/users/0190c4d8-0000-7000-8000-000000000000"} {
		refusedWith(t, g.h.Do(t, "PATCH", path, g.adminTok, map[string]any{"role": "clerk"}), http.StatusNotFound, problem.CodeNotFound)
		refusedWith(t, g.h.Do(t, "GET", path, g.adminTok, nil), http.StatusNotFound, problem.CodeNotFound)
	}
	refusedWith(t, g.h.Do(t, "POST", "/v1/tokens/not-a-uuid/revoke", g.adminTok, nil), http.StatusNotFound, problem.CodeNotFound)
	require.Equal(t, events, g.count(t, `SELECT count(*) FROM audit_events`))
	require.Equal(t, 1, g.count(t, `SELECT version FROM users WHERE username = 'bob'`))
}

// A revoked token is 401 on its next request; its holder's other tokens
// go on working. The list never shows a token's secret.
func TestTokenRevokedOverHTTPIsRefusedNextRequest(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	bob := g.userID(t, "bob")
	_, err := identity.TokenCreate(g.ctx, g.h.Pool, mustUUID(t, bob), "second")
	require.NoError(t, err)
	resp := g.h.Do(t, "GET", "/v1/users/"+bob+"/tokens", g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(resp.Body), "inv_", "no token is shown")
	var list struct {
		Data []map[string]any `json:"data"`
	}
	resp.JSON(t, &list)
	require.Len(t, list.Data, 2)
	require.ElementsMatch(t, []string{"id", "user_id", "name", "created_at", "last_used_at", "revoked_at", "oauth_client", "scope"}, keys(list.Data[0]))
	require.Nil(t, list.Data[0]["oauth_client"], "an API token is no OAuth grant (ADR-0023)")
	require.Nil(t, list.Data[0]["scope"])
	first := list.Data[1]["id"].(string) // the token setupGated made: oldest

	resp = g.h.Do(t, "POST", "/v1/tokens/"+first+"/revoke", g.adminTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var tok identity.Token
	resp.JSON(t, &tok)
	require.NotNil(t, tok.RevokedAt)
	refusedWith(t, g.h.Do(t, "GET", "/v1/me", g.bobTok, nil), http.StatusUnauthorized, problem.CodeUnauthenticated)

	again := g.h.Do(t, "POST", "/v1/tokens/"+first+"/revoke", g.adminTok, nil)
	require.Equal(t, http.StatusOK, again.StatusCode)
	require.JSONEq(t, string(resp.Body), string(again.Body))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM audit_events WHERE type = 'token.revoked'`))
	refusedWith(t, g.h.Do(t, "POST", "/v1/tokens/0190c4d8-0000-7000-8000-000000000000/revoke", g.adminTok, nil),
		http.StatusNotFound, problem.CodeNotFound)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Done when: demote-after-approve and disable-after-approve. The
// requester's issue is refused 403 APPROVAL_REQUIRED and nothing is
// numbered; the API and the inbox page say the decision no longer counts
// and why.
func TestAuthorityLostAfterApproveRefusesIssue(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		patch  map[string]any
		reason approvals.VoidReason
		page   string
	}{
		"demoted":  {map[string]any{"role": "clerk"}, approvals.VoidApproverDemoted, "no longer holds an approving role"},
		"disabled": {map[string]any{"disabled": true}, approvals.VoidApproverDisabled, "was disabled"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := setupGated(t)
			id := g.draft(t).ID.String()
			aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
			g.decide(t, g.bobTok, aid, "approve", nil)
			require.Equal(t, approvals.StatusApproved, g.approval(t, aid).Status)

			resp := g.patchUser(t, g.userID(t, "bob"), tc.patch)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))

			for _, r := range []*apptest.Response{
				g.issue(t, id),
				g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.clerkTok, invokeBody(id)),
			} {
				require.Equal(t, aid, refusedWith(t, r, http.StatusForbidden, approvals.CodeApprovalRequired))
			}
			require.Equal(t, "draft", g.statusOf(t, id))
			require.Zero(t, g.count(t, `SELECT count(*) FROM invoices WHERE number IS NOT NULL`), "nothing numbered")
			require.Zero(t, g.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`))

			var a approvals.Approval
			g.h.Do(t, "GET", "/v1/approvals/"+aid, g.adminTok, nil).JSON(t, &a)
			require.Equal(t, approvals.StatusPending, a.Status)
			require.Zero(t, a.Approvals)
			require.Len(t, a.Decisions, 1)
			require.False(t, a.Decisions[0].Counts)
			require.Equal(t, tc.reason, a.Decisions[0].VoidReason)

			// The inbox page says so beside the decision.
			sid, _, err := web.SessionCreate(g.ctx, g.h.Pool, g.clerk.ID, time.Hour)
			require.NoError(t, err)
			page := g.h.Do(t, "GET", "/approvals/"+aid, "", nil, "Cookie", web.SessionCookie+"="+sid)
			require.Equal(t, http.StatusOK, page.StatusCode)
			require.Contains(t, string(page.Body), "no longer counts")
			require.Contains(t, string(page.Body), tc.page)

			// Another approver's decision is what it takes now.
			g.decide(t, g.carolTok, aid, "approve", nil)
			resp = g.issue(t, id)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
			_, err = audit.Verify(g.ctx, g.h.Pool)
			require.NoError(t, err)
		})
	}
}

// An approval that lapsed before its approver lost their authority is
// history, as any expired request: the change does not reopen it (which
// would give it a fresh pending window another approver could fill), it
// keeps its decision, and issuing is refused APPROVAL_EXPIRED.
func TestAuthorityLostAfterApprovalLapsedRevivesNothing(t *testing.T) {
	t.Parallel()
	for name, patch := range map[string]map[string]any{
		"demoted":  {"role": "clerk"},
		"disabled": {"disabled": true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := setupGated(t)
			id := g.draft(t).ID.String()
			aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
			g.decide(t, g.bobTok, aid, "approve", nil)
			g.clock.Advance(approvals.DefaultApprovedTTL + time.Minute)

			resp := g.patchUser(t, g.userID(t, "bob"), patch)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
			require.Zero(t, g.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.decisions_voided'`))

			var a approvals.Approval
			g.h.Do(t, "GET", "/v1/approvals/"+aid, g.adminTok, nil).JSON(t, &a)
			require.Equal(t, approvals.StatusExpired, a.Status)
			require.Len(t, a.Decisions, 1)
			require.True(t, a.Decisions[0].Counts, "an expired request keeps its decisions")
			refusedWith(t, g.h.Do(t, "POST", "/v1/approvals/"+aid+"/approve", g.carolTok, nil), http.StatusConflict, approvals.CodeNotPending)
			require.Equal(t, aid, refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalExpired))
			require.Equal(t, "draft", g.statusOf(t, id))
			require.Zero(t, g.count(t, `SELECT count(*) FROM invoices WHERE number IS NOT NULL`), "nothing numbered")
			require.Zero(t, g.count(t, `SELECT count(*) FROM approval_requests WHERE status IN ('pending', 'approved', 'consumed')`))
		})
	}
}

// Done when: 32 concurrent issues against a demotion of the approver,
// twenty rounds. An issue that succeeds committed before the demotion
// did (the audit chain's order is the commit order: its lock is held to
// COMMIT); otherwise nothing is issued or numbered and the request is
// pending with the decision voided.
func TestIssueRacingDemotionNeverCountsTheDemotedDecision(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	bob := g.userID(t, "bob")
	const issuers = 32
	var before, after int
	for round := range 20 {
		id := g.draft(t).ID.String()
		aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
		g.decide(t, g.bobTok, aid, "approve", nil)

		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			issued = make(chan struct{}, issuers)
		)
		for i := range issuers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// Spread over about 3 ms from an offset that moves with
				// the round, so the demotion lands before, among and
				// after them.
				time.Sleep(time.Duration(round%4)*time.Millisecond + time.Duration(i)*100*time.Microsecond)
				resp := g.issue(t, id)
				switch resp.StatusCode {
				case http.StatusOK:
					issued <- struct{}{}
				case http.StatusForbidden, http.StatusConflict:
				default:
					t.Errorf("round %d: unexpected %d %s", round, resp.StatusCode, resp.Body)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if resp := g.patchUser(t, bob, map[string]any{"role": "clerk"}); resp.StatusCode != http.StatusOK {
				t.Errorf("round %d: demote: %d %s", round, resp.StatusCode, resp.Body)
			}
		}()
		close(start)
		wg.Wait()
		close(issued)
		n := len(issued)
		require.LessOrEqual(t, n, 1, "round %d: one effect at most", round)

		demotedAt := g.count(t, `SELECT max(seq) FROM audit_events WHERE type = 'user.updated'`)
		if n == 1 {
			before++
			require.Equal(t, "issued", g.statusOf(t, id))
			consumedAt := g.count(t, `SELECT seq FROM audit_events WHERE type = 'approval.consumed' AND subject_id = $1`, aid)
			require.Less(t, consumedAt, demotedAt, "round %d: the issue committed before the demotion", round)
			var a approvals.Approval
			g.h.Do(t, "GET", "/v1/approvals/"+aid, g.adminTok, nil).JSON(t, &a)
			require.Equal(t, approvals.StatusConsumed, a.Status, "round %d: a spent approval is history", round)
			require.True(t, a.Decisions[0].Counts, "round %d", round)
		} else {
			after++
			require.Equal(t, "draft", g.statusOf(t, id), "round %d", round)
			require.Zero(t, g.count(t, `SELECT count(*) FROM invoices WHERE id = $1 AND number IS NOT NULL`, id))
			a := g.approval(t, aid)
			require.Equal(t, approvals.StatusPending, a.Status, "round %d", round)
			require.Equal(t, approvals.VoidApproverDemoted, a.Decisions[0].VoidReason)
		}
		resp := g.patchUser(t, bob, map[string]any{"role": "approver"})
		require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	}
	t.Logf("%d rounds: issued before the demotion %d, refused after it %d", before+after, before, after)
	_, err := audit.Verify(g.ctx, g.h.Pool)
	require.NoError(t, err)
}

// An open approvals event stream of a user an admin disables, or whose
// token an admin revokes, ends within a heartbeat (the re-check bound),
// and its reconnect is refused.
func TestEventsStreamEndsWhenAnAdminTakesAccessAway(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{Config: app.Config{EventsHeartbeat: 50 * time.Millisecond}})
	_, adminTok := h.User(t, "ada", identity.RoleAdmin)
	for name, take := range map[string]func(t *testing.T, u *identity.User) *apptest.Response{
		"dora": func(t *testing.T, u *identity.User) *apptest.Response {
			return h.Do(t, "PATCH", "/v1/users/"+u.ID.String(), adminTok, map[string]any{"disabled": true})
		},
		"tom": func(t *testing.T, u *identity.User) *apptest.Response {
			var list struct {
				Data []identity.Token `json:"data"`
			}
			h.Do(t, "GET", "/v1/users/"+u.ID.String()+"/tokens", adminTok, nil).JSON(t, &list)
			require.Len(t, list.Data, 1)
			return h.Do(t, "POST", "/v1/tokens/"+list.Data[0].ID.String()+"/revoke", adminTok, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			u, tok := h.User(t, name, identity.RoleApprover)
			rd, done := openEvents(t, h, "Authorization", "Bearer "+tok)
			defer done()
			resp := take(t, u)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
			untilEnd(t, rd)
			refusedWith(t, h.Do(t, "GET", "/v1/approvals/events", tok, nil), http.StatusUnauthorized, problem.CodeUnauthenticated)
		})
	}
}
