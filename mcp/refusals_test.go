package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mcp"
	"github.com/invoiced/invoiced/oauth"
	"github.com/invoiced/invoiced/oauth/oauthtest"
	"github.com/invoiced/invoiced/server"
	"github.com/stretchr/testify/require"
)

type bundle struct {
	h                       *apptest.Harness
	clerk, clerk2, approver string
	// grants are the OAuth grants of setupOAuth's tokens.
	grants map[string]uuid.UUID
}

func setup(t *testing.T, cfg app.Config) *bundle {
	t.Helper()
	return setupWith(t, apptest.Options{Config: cfg})
}

// setupWith is setup with the harness's options.
func setupWith(t *testing.T, opts apptest.Options) *bundle {
	t.Helper()
	h := apptest.New(t, opts)
	b := &bundle{h: h}
	_, b.clerk = h.User(t, "clerk", identity.RoleClerk)
	_, b.clerk2 = h.User(t, "clerk2", identity.RoleClerk)
	_, b.approver = h.User(t, "approver", identity.RoleApprover)
	return b
}

// setupOAuth is setup with the clerks' tokens OAuth access tokens of
// grants of scope read write (ADR-0023); the approver, who decides on
// /v1, keeps an API token.
func setupOAuth(t *testing.T, cfg app.Config) *bundle {
	t.Helper()
	b := setup(t, cfg)
	b.grants = map[string]uuid.UUID{}
	for _, tok := range []*string{&b.clerk, &b.clerk2} {
		u, err := identity.TokenAuthenticate(context.Background(), b.h.Pool, *tok)
		require.NoError(t, err)
		var grant uuid.UUID
		*tok, grant = oauthtest.Grant(context.Background(), t, b.h.Pool, u.ID, oauth.ScopeReadWrite)
		b.grants[*tok] = grant
	}
	return b
}

// credentials are the two kinds of bearer token /mcp takes: its gates
// hold the same over each.
var credentials = map[string]func(*testing.T, app.Config) *bundle{"api token": setup, "oauth": setupOAuth}

// revoke revokes tok: an API token, or an OAuth token's grant.
func (b *bundle) revoke(t *testing.T, tok string) {
	t.Helper()
	if grant, ok := b.grants[tok]; ok {
		_, err := b.h.Pool.Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, grant)
		require.NoError(t, err)
		return
	}
	require.NoError(t, identity.TokenRevoke(context.Background(), b.h.Pool, tok))
}

// written counts the rows a refused call must not have written.
func (b *bundle) written(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"customers", "invoices", "approval_requests", "audit_events"} {
		out[table] = count(t, b.h, "SELECT count(*) FROM "+table)
	}
	return out
}

func TestUnauthenticatedIs401(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	revoked := b.h.User
	_, gone := revoked(t, "gone", identity.RoleClerk)
	require.NoError(t, identity.TokenRevoke(context.Background(), b.h.Pool, gone))
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	for name, authz := range map[string]string{
		"missing": "", "bad token": "Bearer not-a-token", "revoked": "Bearer " + gone, "basic": "Basic Y2xlcms6eA==",
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			req, err := http.NewRequest(method, b.h.URL+"/mcp", strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if authz != "" {
				req.Header.Set("Authorization", authz)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name+" "+method)
			require.Equal(t, server.ProblemContentType, resp.Header.Get("Content-Type"), name)
			// Where to get a token (RFC 9728 §5.1); invalid_token when one
			// was sent (RFC 6750 §3.1), so a client starts its OAuth flow.
			want := `Bearer resource_metadata="` + b.h.URL + `/.well-known/oauth-protected-resource/mcp", scope="read write"`
			if authz != "" {
				want += `, error="invalid_token", error_description="the access token is missing, expired or revoked"`
			}
			require.Equal(t, want, resp.Header.Get("WWW-Authenticate"), name)
		}
	}
}

// A session belongs to the user and role that opened it: another
// clerk's token, or the same user after a role change, is refused on it.
func TestSessionBelongsToItsUser(t *testing.T) {
	t.Parallel()
	for name, mk := range credentials {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := mk(t, app.Config{})
			a := openSession(t, b.h.URL, b.clerk, true)
			other := openSession(t, b.h.URL, b.clerk2, true)
			list := map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
			resp := other.post(a.id, list)
			resp.Body.Close()
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			g := get(t, b.h.URL, b.clerk2, a.id)
			g.Body.Close()
			require.Equal(t, http.StatusForbidden, g.StatusCode)

			_, err := b.h.Pool.Exec(context.Background(), `UPDATE users SET role = 'approver' WHERE username = 'clerk'`)
			require.NoError(t, err)
			resp = a.post(a.id, list)
			resp.Body.Close()
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "a role change ends the session's tools")
		})
	}
}

// An elicitation goes to the session that called, on the call's own
// stream: another clerk can neither answer it from their session nor
// post to the caller's; a replayed answer does nothing.
func TestElicitationAnswersOnlyFromItsSession(t *testing.T) {
	t.Parallel()
	for name, mk := range credentials {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := mk(t, app.Config{})
			a := openSession(t, b.h.URL, b.clerk, true)
			other := openSession(t, b.h.URL, b.clerk2, true)
			before := b.written(t)

			st := a.request("tools/call", map[string]any{"name": "create-customer", "arguments": map[string]any{"name": "Forged Ltd", "currency": "EUR"}})
			ask := st.next()
			require.Equal(t, "elicitation/create", ask.Method)
			require.Contains(t, string(ask.Params), "Forged Ltd")
			yes := map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}

			// The other clerk's answer on their own session is not an answer to
			// this call, and they cannot post to the caller's session at all.
			require.Equal(t, http.StatusAccepted, other.answer(other.id, ask.ID, yes))
			require.Equal(t, http.StatusForbidden, other.answer(a.id, ask.ID, yes))
			g := get(t, b.h.URL, b.clerk2, a.id)
			g.Body.Close()
			require.Equal(t, http.StatusForbidden, g.StatusCode, "nor open the caller's stream")

			require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "decline"}))
			res := st.result().error(t)
			require.Equal(t, "CONFIRMATION_INVALID", res.Code)
			require.Equal(t, "denied", res.Reason)

			// A replayed acceptance finds nothing waiting.
			require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, yes))
			time.Sleep(100 * time.Millisecond)
			require.Equal(t, before, b.written(t))
			require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM confirmations WHERE decision = 'denied' AND used_at IS NOT NULL`))
		})
	}
}

// The user dismissing the form (cancel) is not a no: the call is not done
// and reads "cancelled"; the confirmation is spent all the same.
func TestCancelledElicitationReadsCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	s := openSession(t, b.h.URL, b.clerk, true)
	before := b.written(t)
	st := s.request("tools/call", map[string]any{"name": "create-customer", "arguments": map[string]any{"name": "Dismissed Ltd", "currency": "EUR"}})
	ask := st.next()
	require.Equal(t, "elicitation/create", ask.Method)
	require.Equal(t, http.StatusAccepted, s.answer(s.id, ask.ID, map[string]any{"action": "cancel"}))
	e := st.result().error(t)
	require.Equal(t, "CONFIRMATION_INVALID", e.Code)
	require.Equal(t, "cancelled", e.Reason)
	require.Contains(t, e.Message, "dismissed")
	require.NotContains(t, e.Message, "declined")
	require.Equal(t, before, b.written(t))
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM confirmations WHERE capability = 'create-customer' AND used_at IS NOT NULL AND decision = 'denied'`))
}

// A client whose tools/call stream breaks while its user is being asked
// (a dropped connection: no notifications/cancelled) leaves nothing to
// confirm: the question ends with the request, its confirmation is spent
// as declined, and an acceptance sent afterwards runs nothing.
func TestDroppedCallStreamEndsItsQuestion(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	a := openSession(t, b.h.URL, b.clerk, true)
	before := b.written(t)

	st := a.request("tools/call", map[string]any{"name": "create-customer", "arguments": map[string]any{"name": "Gone Ltd", "currency": "EUR"}})
	ask := st.next()
	require.Equal(t, "elicitation/create", ask.Method)
	st.drop()
	spent := func() bool {
		var n int
		err := b.h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM confirmations
			WHERE capability = 'create-customer' AND decision = 'denied' AND used_at IS NOT NULL AND decision_reason = $1`, mcp.ReasonClientGone).Scan(&n)
		return err == nil && n == 1
	}
	require.Eventually(t, spent, 10*time.Second, 20*time.Millisecond, "the confirmation was not spent when its client went away")

	require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}))
	require.Equal(t, before, b.written(t))
	require.Zero(t, count(t, b.h, `SELECT count(*) FROM customers WHERE name = 'Gone Ltd'`))
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM confirmations`), "one question, spent once")
	// The session outlives the call: it is asked again, and its user's
	// yes now runs the call once.
	st = a.request("tools/call", map[string]any{"name": "create-customer", "arguments": map[string]any{"name": "Gone Ltd", "currency": "EUR"}})
	ask = st.next()
	require.Equal(t, "elicitation/create", ask.Method)
	require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}))
	require.False(t, st.result().IsError)
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM customers WHERE name = 'Gone Ltd'`))
}

// The client's multi-round-trip fields on tools/call are not answers: a
// call that carries a forged acceptance still asks, or still needs
// confirmation.
func TestForgedRequestStateIsIgnored(t *testing.T) {
	t.Parallel()
	for name, mk := range credentials {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := mk(t, app.Config{})
			before := b.written(t)
			forged := map[string]any{"name": "create-customer", "arguments": map[string]any{"name": "Forged Ltd", "currency": "EUR"},
				"requestState": "forged", "inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}

			plain := openSession(t, b.h.URL, b.clerk, false)
			require.Equal(t, "CONFIRMATION_REQUIRED", plain.request("tools/call", forged).result().error(t).Code)

			a := openSession(t, b.h.URL, b.clerk, true)
			st := a.request("tools/call", forged)
			ask := st.next()
			require.Equal(t, "elicitation/create", ask.Method)
			require.Equal(t, http.StatusAccepted, a.answer(a.id, ask.ID, map[string]any{"action": "cancel"}))
			require.Equal(t, "CONFIRMATION_INVALID", st.result().error(t).Code)
			require.Equal(t, before, b.written(t))
		})
	}
}

// Input the schema refuses is an error result naming the field, and
// nothing is written, on every risk class.
func TestSchemaFailuresNameTheFieldAndWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	s := openSession(t, b.h.URL, b.clerk, true)
	before := b.written(t)
	for _, tc := range []struct {
		tool  string
		args  string
		field string
	}{
		{"create-customer", `{"currency": "EUR"}`, "name"},
		{"create-customer", `{"name": "X", "currency": "euro"}`, "currency"},
		{"create-draft-invoice", `{"customer_id": "` + d.CustomerID.String() + `", "lines": [{"description": "x", "quantity": "2.00001", "unit_amount": 1}]}`, "lines.0.quantity"},
		{"get-invoice", `{"invoice_id": "not-a-uuid"}`, "invoice_id"},
		{"issue-invoice", `{"invoice_id": "` + d.ID.String() + `", "force": true}`, "force"},
		{"list-invoices", `{"limit": 1000}`, "limit"},
	} {
		e := s.call(tc.tool, json.RawMessage(tc.args)).error(t)
		require.Equal(t, "VALIDATION_FAILED", e.Code, tc.tool+" "+tc.args)
		require.Equal(t, tc.field, e.Errors[0].Field, tc.tool+" "+tc.args)
	}
	require.Equal(t, before, b.written(t))
	require.Equal(t, 0, count(t, b.h, `SELECT count(*) FROM confirmations`), "no confirmation was minted for refused input")
}

// Eight sessions retry an approved issue at once: one issues, the others
// are refused.
func TestApprovedIssueOneWinnerAcrossSessions(t *testing.T) {
	t.Parallel()
	for name, mk := range credentials {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := mk(t, app.Config{})
			d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
			args := map[string]any{"invoice_id": d.ID.String()}
			req := openSession(t, b.h.URL, b.clerk, false).call("issue-invoice", args).error(t)
			require.Equal(t, "APPROVAL_REQUIRED", req.Code)
			r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+req.ApprovalID+"/approve", b.approver, map[string]any{})
			require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

			sessions := make([]*rawSession, 8)
			for i := range sessions {
				sessions[i] = openSession(t, b.h.URL, b.clerk, false)
			}
			results := make([]toolResult, len(sessions))
			var wg sync.WaitGroup
			for i, s := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = s.call("issue-invoice", args)
				}()
			}
			wg.Wait()
			issued := 0
			for _, res := range results {
				if !res.IsError {
					issued++
					continue
				}
				code := res.error(t).Code
				require.True(t, code == "INVALID_TRANSITION" || strings.HasPrefix(code, "APPROVAL_"), code)
			}
			require.Equal(t, 1, issued)
			require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued'`))
		})
	}
}

// An open GET stream ends once its token is revoked.
func TestStreamEndsWhenTheTokenIsRevoked(t *testing.T) {
	t.Parallel()
	for name, mk := range credentials {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := mk(t, app.Config{EventsHeartbeat: 50 * time.Millisecond})
			s := openSession(t, b.h.URL, b.clerk, false)
			g := get(t, b.h.URL, b.clerk, s.id)
			defer g.Body.Close()
			require.Equal(t, http.StatusOK, g.StatusCode)
			b.revoke(t, b.clerk)
			done := make(chan error, 1)
			go func() { _, err := io.Copy(io.Discard, g.Body); done <- err }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the stream outlived its revoked token")
			}
		})
	}
}

// An admin connected through OAuth asks for an issue: APPROVAL_REQUIRED,
// and no credential of theirs decides it: their access token is no /v1
// credential, and their API token is the requester's.
func TestSelfApprovalImpossibleOverOAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	admin, api := b.h.User(t, "admin", identity.RoleAdmin)
	tok, _ := oauthtest.Grant(context.Background(), t, b.h.Pool, admin.ID, oauth.ScopeReadWrite)
	d := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	req := openSession(t, b.h.URL, tok, true).call("issue-invoice", map[string]any{"invoice_id": d.ID.String()}).error(t)
	require.Equal(t, "APPROVAL_REQUIRED", req.Code)

	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+req.ApprovalID+"/approve", tok, map[string]any{})
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+req.ApprovalID+"/approve", api, map[string]any{})
	require.Equal(t, http.StatusForbidden, r.StatusCode, string(r.Body))
	require.Equal(t, 1, count(t, b.h, `SELECT count(*) FROM approval_requests WHERE status = 'pending'`))
	require.Zero(t, count(t, b.h, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued'`))
}
