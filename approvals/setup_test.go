package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/clocktest"
	"github.com/invoiced/invoiced/jsondoc"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

type bundle struct {
	ctx    context.Context
	db     store.Executor
	clock  *clocktest.Clock
	gate   *approvals.Gate
	svc    *approvals.Service
	clerk  identity.Principal
	clerk2 identity.Principal
	appr1  identity.Principal
	appr2  identity.Principal
	admin  identity.Principal
}

func user(t *testing.T, ctx context.Context, db store.Executor, name string, role identity.Role) identity.Principal {
	t.Helper()
	u, err := identity.UserCreate(ctx, db, identity.UserCreateParams{Username: name, DisplayName: name, Role: role})
	require.NoError(t, err)
	return u.Principal()
}

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// setup returns a rolled-back transaction with users of every role, a gate
// and a service on a settable clock, and a "targets" table standing in for
// invoices: the gate is tested here exactly as a consequential handler
// calls it. The service's transactions are savepoints of it.
func setup(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, storetest.Tx(t))
}

// setupPool is setup on a database of the test's own, for tests whose
// goroutines race: one transaction serves one statement at a time.
func setupPool(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, storetest.Pool(t))
}

func setupOn(t *testing.T, db store.Executor) *bundle {
	t.Helper()
	ctx := context.Background()
	_, err := db.Exec(ctx, `CREATE TABLE targets (id text PRIMARY KEY, version bigint NOT NULL DEFAULT 1,
		status text NOT NULL DEFAULT 'draft', amount bigint NOT NULL, currency text NOT NULL DEFAULT 'EUR')`)
	require.NoError(t, err)
	clk := clocktest.New(time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC))
	pol := approvals.Policy{Now: clk.Now, Capabilities: []string{"delete-invoice", "issue-invoice"}}
	b := &bundle{
		ctx: ctx, db: db, clock: clk,
		gate: approvals.NewGate(pol, outboxtest.Emitter(t)),
		svc:  approvals.NewService(db, pol, nil, outboxtest.Emitter(t)),
	}
	b.clerk = user(t, ctx, db, "clerk", identity.RoleClerk)
	b.clerk2 = user(t, ctx, db, "clerk2", identity.RoleClerk)
	b.appr1 = user(t, ctx, db, "appr1", identity.RoleApprover)
	b.appr2 = user(t, ctx, db, "appr2", identity.RoleApprover)
	b.admin = user(t, ctx, db, "admin", identity.RoleAdmin)
	return b
}

func (b *bundle) target(t *testing.T, id string, amount int64) {
	t.Helper()
	_, err := b.db.Exec(b.ctx, `INSERT INTO targets (id, amount) VALUES ($1, $2)`, id, amount)
	require.NoError(t, err)
}

func (b *bundle) edit(t *testing.T, id string) {
	t.Helper()
	_, err := b.db.Exec(b.ctx, `UPDATE targets SET version = version + 1 WHERE id = $1`, id)
	require.NoError(t, err)
}

// call builds a capability call whose effective input is {"id": target}.
func call(t *testing.T, name string, p identity.Principal, target string) capability.Call {
	t.Helper()
	input := []byte(fmt.Sprintf(`{"id":%q}`, target))
	h, err := jsondoc.Hash(input)
	require.NoError(t, err)
	return capability.Call{Name: name, Principal: p, Via: capability.PathREST, Input: input, InputHash: h}
}

const codeInvalidTransition = "INVALID_TRANSITION"

// invoke runs a consequential effect as invoices does: lock the target,
// check its state, pass the gate, apply the effect, audit it, commit.
func (b *bundle) invoke(ctx context.Context, c capability.Call, targetID string) (capability.Grant, error) {
	var grant capability.Grant
	err := store.WithTx(ctx, b.db, func(ctx context.Context, tx pgx.Tx) error {
		var (
			version, amount  int64
			status, currency string
		)
		if err := tx.QueryRow(ctx, `SELECT version, status, amount, currency FROM targets WHERE id = $1 FOR UPDATE`, targetID).
			Scan(&version, &status, &amount, &currency); err != nil {
			return store.MapError(err, "target")
		}
		if status != "draft" {
			return problem.Conflict(codeInvalidTransition, "target is "+status)
		}
		snap, _ := json.Marshal(map[string]any{"id": targetID, "version": version, "amount": amount})
		g, err := b.gate.AuthorizeTx(ctx, tx, c, capability.Target{
			Type: "invoice", ID: targetID, Version: version, Amount: amount, Currency: currency, Snapshot: snap,
		})
		if err != nil {
			return err
		}
		next := "issued"
		if c.Name == "delete-invoice" {
			next = "deleted"
		}
		if _, err := tx.Exec(ctx, `UPDATE targets SET status = $2, version = version + 1 WHERE id = $1`, targetID, next); err != nil {
			return err
		}
		if _, err := audit.AppendTx(ctx, tx, audit.Event{Type: "invoice." + next, ActorID: c.Principal.UserID.String(),
			Actor: c.Principal.Username, Via: string(c.Via), SubjectType: "invoice", SubjectID: targetID,
			Data: map[string]any{"approval_id": g.ApprovalID, "invocation_id": g.InvocationID}}); err != nil {
			return err
		}
		grant = g
		return nil
	})
	return grant, err
}

// refused asserts err is the problem code and returns its approval_id.
func refused(t *testing.T, err error, status int, code string) string {
	t.Helper()
	pe, ok := problem.As(err)
	require.True(t, ok, "want problem %s, got %v", code, err)
	require.Equal(t, code, pe.Code, "%v", err)
	require.Equal(t, status, pe.Status)
	id, _ := pe.Extra["approval_id"].(string)
	return id
}

func (b *bundle) required(t *testing.T, c capability.Call, targetID string) string {
	t.Helper()
	_, err := b.invoke(b.ctx, c, targetID)
	id := refused(t, err, http.StatusForbidden, approvals.CodeApprovalRequired)
	require.NotEmpty(t, id)
	return id
}

func (b *bundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(b.ctx, q, args...).Scan(&n))
	return n
}

func (b *bundle) verify(t *testing.T) {
	t.Helper()
	_, err := audit.Verify(b.ctx, b.db)
	require.NoError(t, err)
}
