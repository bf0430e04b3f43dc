package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

// An approver hands their approvals over from the Delegations page and
// ends it there; the delegate sees what they hold; a refusal (a clerk as
// delegate) is the page again with the service's sentence, nothing
// written; a clerk's page offers no form and the service refuses one.
func TestDelegationsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "alice", identity.RoleApprover)
	b.user(t, "bob", identity.RoleApprover)
	b.user(t, "carl", identity.RoleClerk)
	alice := b.browser(t)
	require.Equal(t, http.StatusSeeOther, alice.signIn("alice", testPassword).status)
	p := alice.do(http.MethodGet, "/delegations", nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `href="/delegations" aria-current="page"`)
	csrf := csrfOf(t, p)
	until := time.Now().UTC().Add(48 * time.Hour).Format("2006-01-02T15:04")

	res := alice.do(http.MethodPost, "/delegations", url.Values{"csrf_token": {csrf}, "delegate": {"carl"}, "until": {until}})
	require.Equal(t, http.StatusUnprocessableEntity, res.status)
	require.Contains(t, res.body, "not an enabled approver or admin")
	res = alice.do(http.MethodPost, "/delegations", url.Values{"csrf_token": {csrf}, "delegate": {"bob"}, "until": {"next week"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.status)
	require.Contains(t, res.body, "The until must be a date and time")
	require.Zero(t, b.delegations(t))

	res = alice.do(http.MethodPost, "/delegations", url.Values{"csrf_token": {csrf}, "delegate": {"bob"}, "until": {until}})
	require.Equal(t, http.StatusSeeOther, res.status)
	require.Equal(t, 1, b.delegations(t))
	p = alice.do(http.MethodGet, "/delegations?done=created", nil)
	require.Contains(t, p.body, "Your approvals are handed over")
	require.Contains(t, p.body, "<td>bob</td>")
	require.Contains(t, p.body, "active")

	bob := b.browser(t)
	require.Equal(t, http.StatusSeeOther, bob.signIn("bob", testPassword).status)
	held := bob.do(http.MethodGet, "/delegations", nil)
	require.Contains(t, held.body, "<td>alice</td>")

	ds, err := b.h.App.Approvals().DelegationList(context.Background(), identity.Principal{UserID: b.userID(t, "alice")})
	require.NoError(t, err)
	res = alice.do(http.MethodPost, "/delegations/"+ds[0].ID.String()+"/end", url.Values{"csrf_token": {csrf}})
	require.Equal(t, http.StatusSeeOther, res.status)
	ds, err = b.h.App.Approvals().DelegationList(context.Background(), identity.Principal{UserID: b.userID(t, "alice")})
	require.NoError(t, err)
	require.Equal(t, approvals.DelegationEnded, ds[0].Status)

	carl := b.browser(t)
	require.Equal(t, http.StatusSeeOther, carl.signIn("carl", testPassword).status)
	p = carl.do(http.MethodGet, "/delegations", nil)
	require.Contains(t, p.body, "Delegating needs the approver role")
	res = carl.do(http.MethodPost, "/delegations", url.Values{"csrf_token": {csrfOf(t, p)}, "delegate": {"bob"}, "until": {until}})
	require.Equal(t, http.StatusForbidden, res.status)
	require.Equal(t, 1, b.delegations(t))
}

func (b *bundle) delegations(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM approval_delegations`).Scan(&n))
	return n
}

func (b *bundle) userID(t *testing.T, name string) uuid.UUID {
	t.Helper()
	u, err := identity.UserGetByUsername(context.Background(), b.h.Pool, name)
	require.NoError(t, err)
	return u.ID
}

// The request page says who may decide a tier that names its deciders and
// when it escalates, and that a delegate's approval was for the
// delegator whose approvals they held.
func TestApprovalPageShowsDecidersAndADelegatedDecision(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	admin := b.user(t, "ada", identity.RoleAdmin)
	alice := b.user(t, "alice", identity.RoleApprover)
	bob := b.user(t, "bob", identity.RoleApprover)
	clerk := b.user(t, "carl", identity.RoleClerk)
	zero := int64(0)
	_, err := b.h.App.Approvals().PolicySet(ctx, admin.Principal(), capability.PathREST, approvals.RuleInput{
		Capability: "issue-invoice", Currency: "EUR", MinAmount: &zero, Approvers: 1,
		Deciders:   &approvals.AudienceInput{Users: []string{"alice"}},
		Escalation: &approvals.EscalationInput{After: "24h", Role: "admin"}}, etag.IfMatch{})
	require.NoError(t, err)
	id := b.request(t, clerk, capability.PathBinding)
	_, err = b.h.App.Approvals().DelegationCreate(ctx, alice.Principal(), capability.PathREST,
		approvals.DelegationInput{Delegate: "bob", Until: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	_, err = b.h.App.Approvals().Decide(ctx, bob.Principal(), capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
	require.NoError(t, err)

	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ada", testPassword).status)
	p := br.do(http.MethodGet, "/approvals/"+id.String(), nil)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `id="deciders">alice, and whoever holds their approvals`)
	require.Contains(t, p.body, "escalates at")
	require.Contains(t, p.body, "to admins</span>")
	require.Contains(t, p.body, "by bob for alice, whose approvals they held")
}
