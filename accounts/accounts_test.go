package accounts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/accounts"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

type bundle struct {
	ctx   context.Context
	db    store.Executor
	svc   *accounts.Service
	appr  *approvals.Service
	gate  *approvals.Gate
	admin *identity.User
	by    accounts.Actor
}

// setup returns a rolled-back transaction with one admin, the service
// and an approvals gate over it.
func setup(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, storetest.Tx(t))
}

// setupPool is setup on a database of the test's own, for racing tests.
func setupPool(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, storetest.Pool(t))
}

func setupOn(t *testing.T, db store.Executor) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background(), db: db}
	b.appr = approvals.NewService(db, approvals.Policy{}, nil, outboxtest.Emitter(t))
	b.gate = approvals.NewGate(approvals.Policy{}, outboxtest.Emitter(t))
	b.svc = accounts.NewService(db, b.appr)
	b.admin = b.user(t, "ada", identity.RoleAdmin)
	b.by = accounts.ActorOf(b.admin.Principal(), capability.PathREST)
	return b
}

func (b *bundle) user(t *testing.T, name string, role identity.Role) *identity.User {
	t.Helper()
	u, err := identity.UserCreate(b.ctx, b.db, identity.UserCreateParams{Username: name, Role: role})
	require.NoError(t, err)
	return u
}

func (b *bundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(b.ctx, q, args...).Scan(&n))
	return n
}

func ptr[T any](v T) *T { return &v }

// refused asserts err is a problem with status and code.
func refused(t *testing.T, err error, status int, code string) *problem.Error {
	t.Helper()
	pe, ok := problem.As(err)
	require.True(t, ok, "want %s, got %v", code, err)
	require.Equal(t, status, pe.Status, "%v", err)
	require.Equal(t, code, pe.Code, "%v", err)
	return pe
}

// lastEvent returns the newest audit event of type typ.
func (b *bundle) lastEvent(t *testing.T, typ string) audit.Event {
	t.Helper()
	var raw []byte
	require.NoError(t, b.db.QueryRow(b.ctx, `SELECT event FROM audit_events WHERE type = $1 ORDER BY seq DESC LIMIT 1`, typ).Scan(&raw))
	var ev audit.Event
	require.NoError(t, json.Unmarshal(raw, &ev))
	return ev
}

// Every change is audited: who, which user, and each field from → to. A
// patch that changes nothing writes nothing.
func TestUpdateAuditsEachFieldBeforeAndAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bob := b.user(t, "bob", identity.RoleApprover)

	up, err := b.svc.Update(b.ctx, b.by, bob.ID, etag.MatchVersion(bob.Version), accounts.Patch{
		Role: ptr(identity.RoleClerk), SetEmail: true, Email: ptr("  Bob@Example.com "), DisplayName: ptr("Bob B."),
	})
	require.NoError(t, err)
	require.Empty(t, up.Voided, "bob had decided nothing")
	u := up.User
	require.Equal(t, identity.RoleClerk, u.Role)
	require.Equal(t, "Bob@Example.com", *u.Email, "trimmed, case kept")
	require.Equal(t, bob.Version+1, u.Version)

	ev := b.lastEvent(t, "user.updated")
	require.Equal(t, b.admin.ID.String(), ev.ActorID)
	require.Equal(t, "ada", ev.Actor)
	require.Equal(t, "rest", ev.Via)
	require.Equal(t, bob.ID.String(), ev.SubjectID)
	require.Equal(t, map[string]any{
		"username": "bob",
		"changes": map[string]any{
			"role":         map[string]any{"from": "approver", "to": "clerk"},
			"email":        map[string]any{"from": nil, "to": "Bob@Example.com"},
			"display_name": map[string]any{"from": "bob", "to": "Bob B."},
		},
		"approvals_voided": []any{},
	}, ev.Data)

	events := b.count(t, `SELECT count(*) FROM audit_events`)
	same, err := b.svc.Update(b.ctx, b.by, bob.ID, etag.IfMatch{}, accounts.Patch{Role: ptr(identity.RoleClerk), DisplayName: ptr("Bob B.")})
	require.NoError(t, err)
	require.Equal(t, u.Version, same.User.Version, "nothing written")
	require.Equal(t, events, b.count(t, `SELECT count(*) FROM audit_events`))

	up, err = b.svc.Update(b.ctx, b.by, bob.ID, etag.IfMatch{}, accounts.Patch{SetEmail: true})
	require.NoError(t, err)
	require.Nil(t, up.User.Email, "cleared")
	_, err = audit.Verify(b.ctx, b.db)
	require.NoError(t, err)
}

// Refusals: each a typed problem naming the field, nothing written.
func TestUpdateRefusesBadInputWritingNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bob := b.user(t, "bob", identity.RoleApprover)
	carl := b.user(t, "carl", identity.RoleClerk)
	_, err := b.svc.Update(b.ctx, b.by, carl.ID, etag.IfMatch{}, accounts.Patch{SetEmail: true, Email: ptr("carl@example.com")})
	require.NoError(t, err)
	events := b.count(t, `SELECT count(*) FROM audit_events`)

	for name, tc := range map[string]struct {
		id      uuid.UUID
		ifMatch int64
		patch   accounts.Patch
		status  int
		code    string
		field   string
	}{
		"unknown role":      {bob.ID, 0, accounts.Patch{Role: ptr(identity.Role("owner"))}, 422, problem.CodeValidation, "role"},
		"not an address":    {bob.ID, 0, accounts.Patch{Email: ptr("x"), SetEmail: true}, 422, problem.CodeValidation, "email"},
		"two at signs":      {bob.ID, 0, accounts.Patch{Email: ptr("a@b@example.com"), SetEmail: true}, 422, problem.CodeValidation, "email"},
		"with a name":       {bob.ID, 0, accounts.Patch{Email: ptr("Bob <bob@example.com>"), SetEmail: true}, 422, problem.CodeValidation, "email"},
		"space inside":      {bob.ID, 0, accounts.Patch{Email: ptr("bob smith@example.com"), SetEmail: true}, 422, problem.CodeValidation, "email"},
		"override inside":   {bob.ID, 0, accounts.Patch{Email: ptr("moc.elpmaxe@bob\u202e"), SetEmail: true}, 422, problem.CodeValidation, "email"},
		"invisible inside":  {bob.ID, 0, accounts.Patch{Email: ptr("bob\u200b@example.com"), SetEmail: true}, 422, problem.CodeValidation, "email"},
		"too long":          {bob.ID, 0, accounts.Patch{Email: ptr(fmt.Sprintf("%0250d@example.com", 0)), SetEmail: true}, 422, problem.CodeValidation, "email"},
		"NUL in name":       {bob.ID, 0, accounts.Patch{DisplayName: ptr("Bob\x00")}, 422, problem.CodeValidation, "display_name"},
		"email taken":       {bob.ID, 0, accounts.Patch{Email: ptr("CARL@example.COM"), SetEmail: true}, 409, problem.CodeConflict, ""},
		"stale If-Match":    {bob.ID, bob.Version + 7, accounts.Patch{Role: ptr(identity.RoleClerk)}, 412, etag.CodeVersionMismatch, ""},
		"unknown user":      {uuid.Must(uuid.NewV7()), 0, accounts.Patch{Role: ptr(identity.RoleClerk)}, 404, problem.CodeNotFound, ""},
		"last admin demote": {b.admin.ID, 0, accounts.Patch{Role: ptr(identity.RoleApprover)}, 409, accounts.CodeLastAdmin, ""},
		"last admin gone":   {b.admin.ID, 0, accounts.Patch{Disabled: ptr(true)}, 409, accounts.CodeLastAdmin, ""},
		"last admin clerk":  {b.admin.ID, b.admin.Version, accounts.Patch{Role: ptr(identity.RoleClerk), Disabled: ptr(true)}, 409, accounts.CodeLastAdmin, ""},
	} {
		_, err := b.svc.Update(b.ctx, b.by, tc.id, etag.MatchVersion(tc.ifMatch), tc.patch)
		pe := refused(t, err, tc.status, tc.code)
		if tc.field != "" {
			require.Len(t, pe.Errors, 1, name)
			require.Equal(t, tc.field, pe.Errors[0].Field, name)
		}
	}
	got, err := b.svc.Get(b.ctx, bob.ID)
	require.NoError(t, err)
	require.Equal(t, bob.Version, got.Version, "nothing written")
	got, err = b.svc.Get(b.ctx, b.admin.ID)
	require.NoError(t, err)
	require.Equal(t, identity.RoleAdmin, got.Role)
	require.False(t, got.Disabled)
	require.Equal(t, events, b.count(t, `SELECT count(*) FROM audit_events`))

	// With a second admin, either may go; then the other is the last
	// (and the one left to act).
	eve := b.user(t, "eve", identity.RoleAdmin)
	byEve := accounts.ActorOf(eve.Principal(), capability.PathREST)
	_, err = b.svc.Update(b.ctx, b.by, b.admin.ID, etag.IfMatch{}, accounts.Patch{Disabled: ptr(true)})
	require.NoError(t, err)
	_, err = b.svc.Update(b.ctx, byEve, eve.ID, etag.IfMatch{}, accounts.Patch{Role: ptr(identity.RoleClerk)})
	refused(t, err, http.StatusConflict, accounts.CodeLastAdmin)
	// A disabled admin does not count; enabling one back does.
	_, err = b.svc.Update(b.ctx, byEve, b.admin.ID, etag.IfMatch{}, accounts.Patch{Disabled: ptr(false)})
	require.NoError(t, err)
	_, err = b.svc.Update(b.ctx, byEve, eve.ID, etag.IfMatch{}, accounts.Patch{Role: ptr(identity.RoleClerk)})
	require.NoError(t, err)
}

// request raises a pending issue-invoice request for requester on target
// (of amount minor units of EUR) through the gate, as a consequential
// handler does, and returns its id.
func (b *bundle) request(t *testing.T, requester *identity.User, target string, amount int64) uuid.UUID {
	t.Helper()
	input := []byte(fmt.Sprintf(`{"invoice_id":%q}`, target))
	h, err := jsondoc.Hash(input)
	require.NoError(t, err)
	err = store.WithTx(b.ctx, b.db, func(ctx context.Context, tx pgx.Tx) error {
		_, err := b.gate.AuthorizeTx(ctx, tx,
			capability.Call{Name: "issue-invoice", Principal: requester.Principal(), Via: capability.PathREST, Input: input, InputHash: h},
			capability.Target{Type: "invoice", ID: target, Version: 1, Amount: amount, Currency: "EUR", Snapshot: []byte(`{}`)})
		return err
	})
	pe := refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired)
	return uuid.MustParse(pe.Extra["approval_id"].(string))
}

// Taking away a user's authority to decide voids their decisions on open
// requests in the same transaction: pending ones lose the approval,
// approved ones return to pending; closed requests keep theirs. Each is
// audited, and the user event names the requests.
func TestAuthorityLostVoidsDecisionsOnOpenRequests(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		patch  accounts.Patch
		reason approvals.VoidReason
	}{
		"demoted":  {accounts.Patch{Role: ptr(identity.RoleClerk)}, approvals.VoidApproverDemoted},
		"disabled": {accounts.Patch{Disabled: ptr(true)}, approvals.VoidApproverDisabled},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			clerk := b.user(t, "clerk", identity.RoleClerk)
			bob := b.user(t, "bob", identity.RoleApprover)
			cat := b.user(t, "cat", identity.RoleApprover)
			approved := b.request(t, clerk, "inv-1", 100)
			half := b.request(t, clerk, "inv-2", 5_000_000) // needs two
			denied := b.request(t, clerk, "inv-3", 100)
			other := b.request(t, clerk, "inv-4", 100)
			decide := func(u *identity.User, id uuid.UUID, d, reason string) {
				_, err := b.appr.Decide(b.ctx, u.Principal(), capability.PathREST, id, etag.IfMatch{}, d, reason)
				require.NoError(t, err)
			}
			decide(bob, approved, approvals.DecisionApprove, "")
			decide(bob, half, approvals.DecisionApprove, "")
			decide(bob, denied, approvals.DecisionDeny, "wrong customer")
			decide(cat, other, approvals.DecisionApprove, "")

			up, err := b.svc.Update(b.ctx, b.by, bob.ID, etag.IfMatch{}, tc.patch)
			require.NoError(t, err)
			require.ElementsMatch(t, []uuid.UUID{approved, half}, up.Voided)

			get := func(id uuid.UUID) *approvals.Approval {
				a, err := b.appr.Get(b.ctx, id)
				require.NoError(t, err)
				return a
			}
			for _, id := range []uuid.UUID{approved, half} {
				a := get(id)
				require.Equal(t, approvals.StatusPending, a.Status)
				require.Zero(t, a.Approvals)
				require.False(t, a.Decisions[0].Counts)
				require.Equal(t, tc.reason, a.Decisions[0].VoidReason)
				require.NotNil(t, a.Decisions[0].VoidedAt)
			}
			require.Equal(t, approvals.StatusDenied, get(denied).Status, "a closed request keeps its decisions")
			require.True(t, get(denied).Decisions[0].Counts)
			require.Equal(t, approvals.StatusApproved, get(other).Status, "another approver's decision stands")

			ev := b.lastEvent(t, "user.updated")
			require.ElementsMatch(t, []any{approved.String(), half.String()}, ev.Data.(map[string]any)["approvals_voided"])
			require.Equal(t, 2, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.decisions_voided' AND event->>'actor' = 'ada'`))
			voided := b.lastEvent(t, "approval.decisions_voided").Data.(map[string]any)
			require.Equal(t, []any{map[string]any{"approver_id": bob.ID.String(), "approver": "bob", "reason": string(tc.reason)}}, voided["voided"])

			// Authority back: nothing comes back with it.
			_, err = b.svc.Update(b.ctx, b.by, bob.ID, etag.IfMatch{}, accounts.Patch{Role: ptr(identity.RoleApprover), Disabled: ptr(false)})
			require.NoError(t, err)
			require.Equal(t, approvals.StatusPending, get(approved).Status)
			require.Zero(t, get(approved).Approvals)
			_, err = audit.Verify(b.ctx, b.db)
			require.NoError(t, err)
		})
	}
}

// Tokens: listed without their secret, revoked once (audited), and a
// second revoke answers the token as it is, writing nothing.
func TestTokensListAndRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bob := b.user(t, "bob", identity.RoleApprover)
	tok, err := b.svc.TokenCreate(b.ctx, b.by, bob.ID, "laptop")
	require.NoError(t, err)
	_, err = b.svc.TokenCreate(b.ctx, b.by, bob.ID, "ci")
	require.NoError(t, err)

	list, err := b.svc.Tokens(b.ctx, bob.ID, page.Request{Limit: 1})
	require.NoError(t, err)
	require.Len(t, list.Data, 1)
	require.True(t, list.HasMore)
	require.Equal(t, "ci", list.Data[0].Name, "newest first")
	cur, err := page.ParseCursor(*list.NextCursor)
	require.NoError(t, err)
	list, err = b.svc.Tokens(b.ctx, bob.ID, page.Request{Limit: 1, After: cur})
	require.NoError(t, err)
	require.Len(t, list.Data, 1)
	require.False(t, list.HasMore)
	laptop := list.Data[0]
	require.Equal(t, "laptop", laptop.Name)
	require.Nil(t, laptop.RevokedAt)

	_, err = identity.TokenAuthenticate(b.ctx, b.db, tok)
	require.NoError(t, err)
	revoked, err := b.svc.TokenRevoke(b.ctx, b.by, laptop.ID)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	_, err = identity.TokenAuthenticate(b.ctx, b.db, tok)
	refused(t, err, http.StatusUnauthorized, problem.CodeUnauthenticated)
	ev := b.lastEvent(t, "token.revoked")
	require.Equal(t, laptop.ID.String(), ev.SubjectID)
	require.Equal(t, map[string]any{"user_id": bob.ID.String(), "username": "bob", "name": "laptop"}, ev.Data)

	events := b.count(t, `SELECT count(*) FROM audit_events`)
	again, err := b.svc.TokenRevoke(b.ctx, b.by, laptop.ID)
	require.NoError(t, err)
	require.Equal(t, revoked.RevokedAt, again.RevokedAt)
	require.Equal(t, events, b.count(t, `SELECT count(*) FROM audit_events`))

	_, err = b.svc.TokenRevoke(b.ctx, b.by, uuid.Must(uuid.NewV7()))
	refused(t, err, http.StatusNotFound, problem.CodeNotFound)
	_, err = b.svc.Tokens(b.ctx, uuid.Must(uuid.NewV7()), page.Request{Limit: 5})
	refused(t, err, http.StatusNotFound, problem.CodeNotFound)
}

// Create audits the user and the token it prints, never the token.
func TestCreateAuditsUserAndToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ops := accounts.Actor{Name: "os:root", Via: capability.PathCLI}
	u, tok, err := b.svc.Create(b.ctx, ops, identity.UserCreateParams{Username: "dan", Role: identity.RoleApprover, Email: "dan@example.com"}, "created with the user")
	require.NoError(t, err)
	require.Equal(t, "dan@example.com", *u.Email)
	ev := b.lastEvent(t, "user.created")
	require.Empty(t, ev.ActorID)
	require.Equal(t, "os:root", ev.Actor)
	require.Equal(t, "cli", ev.Via)
	require.Equal(t, "dan@example.com", ev.Data.(map[string]any)["email"])
	var raw string
	require.NoError(t, b.db.QueryRow(b.ctx, `SELECT string_agg(event::text, '') FROM audit_events`).Scan(&raw))
	require.NotContains(t, raw, tok)

	_, _, err = b.svc.Create(b.ctx, ops, identity.UserCreateParams{Username: "dan2", Role: identity.RoleClerk, Email: "DAN@example.com"}, "")
	refused(t, err, http.StatusConflict, problem.CodeConflict)
	_, _, err = b.svc.Create(b.ctx, ops, identity.UserCreateParams{Username: "dan3", Role: identity.RoleClerk, Email: "dan at example"}, "")
	refused(t, err, http.StatusUnprocessableEntity, problem.CodeValidation)
	_, _, err = b.svc.Create(b.ctx, ops, identity.UserCreateParams{Username: "dan4", Role: identity.RoleClerk, Email: "dan\u202e@example.com"}, "")
	require.Equal(t, "email", refused(t, err, http.StatusUnprocessableEntity, problem.CodeValidation).Errors[0].Field)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM users WHERE username LIKE 'dan_'`))
}

// The last enabled admin, under concurrency: every admin demoted or
// disabled at once, each change in its own transaction, leaves exactly
// one, and exactly one change is refused with nothing written. Twenty
// rounds, alternating demotion and disabling. Ops make the changes
// (through the CLI, as no user): an admin making them could lose the
// authority to while they run, which TestActorLosingAdminMidChange
// covers.
func TestLastAdminGuardUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	ops := accounts.Actor{Name: "os:root", Via: capability.PathCLI}
	admins := []*identity.User{b.admin}
	for i := range 3 {
		admins = append(admins, b.user(t, fmt.Sprintf("admin%d", i), identity.RoleAdmin))
	}
	for round := range 20 {
		patch := accounts.Patch{Role: ptr(identity.RoleClerk)}
		if round%2 == 1 {
			patch = accounts.Patch{Disabled: ptr(true)}
		}
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, len(admins))
		)
		for i, a := range admins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = b.svc.Update(b.ctx, ops, a.ID, etag.IfMatch{}, patch)
			}()
		}
		close(start)
		wg.Wait()
		var refusedN int
		for _, err := range errs {
			if err != nil {
				refused(t, err, http.StatusConflict, accounts.CodeLastAdmin)
				refusedN++
			}
		}
		require.Equal(t, 1, refusedN, "round %d", round)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM users WHERE role = 'admin' AND NOT disabled`), "round %d", round)
		require.Equal(t, len(admins)-1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'user.updated'`)-round*(2*len(admins)-2),
			"round %d: one event per change made", round)
		for _, a := range admins {
			_, err := b.svc.Update(b.ctx, ops, a.ID, etag.IfMatch{}, accounts.Patch{Role: ptr(identity.RoleAdmin), Disabled: ptr(false)})
			require.NoError(t, err)
		}
	}
}

// A decision racing its approver's demotion: whichever commits first,
// no request ends approved on the decision of someone who may not
// decide. Either the decision was refused, or it was recorded and then
// voided with the request pending again.
func TestDecisionRacingDemotionNeverCountsAfterIt(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	clerk := b.user(t, "clerk", identity.RoleClerk)
	bob := b.user(t, "bob", identity.RoleApprover)
	var refusedN, voidedN int
	for round := range 20 {
		id := b.request(t, clerk, fmt.Sprintf("inv-%d", round), 100)
		var (
			wg        sync.WaitGroup
			start     = make(chan struct{})
			decideErr error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, decideErr = b.appr.Decide(b.ctx, bob.Principal(), capability.PathREST, id, etag.IfMatch{}, approvals.DecisionApprove, "")
		}()
		go func() {
			defer wg.Done()
			<-start
			_, err := b.svc.Update(b.ctx, b.by, bob.ID, etag.IfMatch{}, accounts.Patch{Role: ptr(identity.RoleClerk)})
			require.NoError(t, err)
		}()
		close(start)
		wg.Wait()
		a, err := b.appr.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, approvals.StatusPending, a.Status, "round %d", round)
		require.Zero(t, a.Approvals, "round %d", round)
		if decideErr != nil {
			refused(t, decideErr, http.StatusForbidden, problem.CodeForbidden)
			require.Empty(t, a.Decisions)
			refusedN++
		} else {
			require.Len(t, a.Decisions, 1)
			require.Equal(t, approvals.VoidApproverDemoted, a.Decisions[0].VoidReason)
			voidedN++
		}
		_, err = b.svc.Update(b.ctx, b.by, bob.ID, etag.IfMatch{}, accounts.Patch{Role: ptr(identity.RoleApprover)})
		require.NoError(t, err)
	}
	t.Logf("decision refused (demotion first) %d, decision voided (decision first) %d", refusedN, voidedN)
}
