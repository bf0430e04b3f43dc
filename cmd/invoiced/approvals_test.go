package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

type approvalsBundle struct {
	ctx   context.Context
	env   env
	pool  *pgxpool.Pool
	gate  *approvals.Gate
	svc   *approvals.Service
	clerk identity.Principal
	bob   identity.Principal
	carol identity.Principal
}

func setupApprovals(t *testing.T) *approvalsBundle {
	t.Helper()
	ctx := context.Background()
	url := storetest.URL(t)
	pool := storetest.PoolFor(t, url)
	b := &approvalsBundle{ctx: ctx, env: env{"DATABASE_URL": url}, pool: pool,
		gate: approvals.NewGate(approvals.Policy{}, outboxtest.Emitter(t)), svc: approvals.NewService(pool, approvals.Policy{}, nil, outboxtest.Emitter(t))}
	mk := func(name string, role identity.Role) identity.Principal {
		u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: role})
		require.NoError(t, err)
		return u.Principal()
	}
	b.clerk, b.bob, b.carol = mk("clara", identity.RoleClerk), mk("bob", identity.RoleApprover), mk("carol", identity.RoleApprover)
	return b
}

// request asks the gate for an approval of capName on target as p.
func (b *approvalsBundle) request(t *testing.T, p identity.Principal, capName, target string) string {
	t.Helper()
	input := []byte(fmt.Sprintf(`{"invoice_id":%q}`, target))
	h, err := jsondoc.Hash(input)
	require.NoError(t, err)
	err = store.WithTx(b.ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := b.gate.AuthorizeTx(ctx, tx, capability.Call{Name: capName, Principal: p, Via: capability.PathREST, Input: input, InputHash: h},
			capability.Target{Type: "invoice", ID: target, Version: 1, Amount: 12000, Currency: "EUR", Snapshot: []byte(`{}`)})
		return err
	})
	pe, ok := problem.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code, "%v", err)
	return pe.Extra["approval_id"].(string)
}

func TestApprovalsCLIListApproveDeny(t *testing.T) {
	t.Parallel()
	b := setupApprovals(t)
	a1 := b.request(t, b.clerk, "issue-invoice", "inv-1")
	a2 := b.request(t, b.clerk, "delete-invoice", "inv-2")

	r := invoke(b.ctx, b.env, "approvals", "list", "--status", "pending")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, a1)
	require.Contains(t, r.stdout, a2)
	require.Contains(t, r.stdout, "120.00 EUR")

	// Flags before or after the id.
	r = invoke(b.ctx, b.env, "approvals", "approve", a1, "--as", "bob")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "is approved")

	r = invoke(b.ctx, b.env, "approvals", "deny", "--as", "carol", a2)
	require.Equal(t, 1, r.code, "a denial needs a reason")
	require.Contains(t, r.stderr, "reason")
	r = invoke(b.ctx, b.env, "approvals", "deny", "--as", "carol", "--reason", "duplicate of INV-7", a2)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "is denied")

	// The CLI applies the inbox's rules: a clerk, the requester, unknowns.
	a3 := b.request(t, b.bob, "issue-invoice", "inv-3")
	for name, args := range map[string][]string{
		"clerk":     {"approvals", "approve", a3, "--as", "clara"},
		"requester": {"approvals", "approve", a3, "--as", "bob"},
		"no user":   {"approvals", "approve", a3, "--as", "nobody"},
		"bad id":    {"approvals", "approve", "nope", "--as", "carol"},
	} {
		r = invoke(b.ctx, b.env, args...)
		require.Equal(t, 1, r.code, name)
		require.NotEmpty(t, r.stderr, name)
	}
	r = invoke(b.ctx, b.env, "approvals", "approve", a3)
	require.Equal(t, 2, r.code, "--as is required")

	r = invoke(b.ctx, b.env, "approvals", "list", "--status", "approved")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, a1)
	require.NotContains(t, r.stdout, a2)
	r = invoke(b.ctx, b.env, "approvals", "list", "--status", "bogus")
	require.Equal(t, 1, r.code)
}

// TestAuditVerifyCLI is done-when 8: verify passes on a database written by
// many concurrent approval flows and fails, naming the row, once a row is
// altered behind the append-only trigger's back.
func TestAuditVerifyCLI(t *testing.T) {
	t.Parallel()
	b := setupApprovals(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := mustParse(t, b.request(t, b.clerk, "issue-invoice", fmt.Sprintf("inv-%d", i)))
			var err error
			switch i % 3 {
			case 0:
				_, err = b.svc.Decide(b.ctx, b.bob, capability.PathCLI, id, etag.IfMatch{}, approvals.DecisionApprove, "ok")
			case 1:
				_, err = b.svc.Decide(b.ctx, b.carol, capability.PathCLI, id, etag.IfMatch{}, approvals.DecisionDeny, "not ok")
			default:
				_, err = b.svc.Cancel(b.ctx, b.clerk, capability.PathCLI, id, etag.IfMatch{})
			}
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_events`).Scan(&n))
	require.Equal(t, 16*2, n)

	r := invoke(b.ctx, b.env, "audit", "verify")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf("%d events verified", n))
	_, head, ok := strings.Cut(strings.TrimSpace(r.stdout), "; head ")
	require.True(t, ok, "verify prints the head to keep: %s", r.stdout)
	r = invoke(b.ctx, b.env, "audit", "verify", "--anchor", head)
	require.Equal(t, 0, r.code, r.stderr)
	r = invoke(b.ctx, b.env, "audit", "verify", "--anchor", "not-a-head")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "--anchor")

	// Moving when an event was recorded breaks the chain; moving it back
	// mends it.
	moveRecordedAt := func(by string) {
		_, err := b.pool.Exec(b.ctx, `SET session_replication_role = replica;
			UPDATE audit_events SET recorded_at = recorded_at + interval '`+by+`' WHERE seq = 3;
			SET session_replication_role = origin`)
		require.NoError(t, err)
	}
	moveRecordedAt("-1 hour")
	r = invoke(b.ctx, b.env, "audit", "verify")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "broken at seq 3")
	moveRecordedAt("1 hour")
	require.Equal(t, 0, invoke(b.ctx, b.env, "audit", "verify").code)

	// A superuser removes the newest event: only the anchor tells.
	_, err := b.pool.Exec(b.ctx, fmt.Sprintf(`ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
		DELETE FROM audit_events WHERE seq = %d;
		ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete`, n))
	require.NoError(t, err)
	require.Equal(t, 0, invoke(b.ctx, b.env, "audit", "verify").code)
	r = invoke(b.ctx, b.env, "audit", "verify", "--anchor", head)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "events were removed")

	// Tamper as a superuser would: switch the trigger off, edit, switch on.
	_, err = b.pool.Exec(b.ctx, `ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete;
		UPDATE audit_events SET event = jsonb_set(event, '{actor}', '"mallory"') WHERE seq = 17;
		ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete`)
	require.NoError(t, err)
	r = invoke(b.ctx, b.env, "audit", "verify")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "seq 17")
	require.True(t, strings.Contains(r.stderr, "16 events before it verified"), r.stderr)
}

func mustParse(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}
