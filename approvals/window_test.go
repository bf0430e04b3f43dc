package approvals_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// pay runs a governed bound call ("record-payment") of amount EUR cents
// by p for customer through the gate, as a payment's handler does: nil
// when the gate let it through, else its refusal.
func (b *bundle) pay(ctx context.Context, gate *approvals.Gate, p identity.Principal, customer uuid.UUID, amount int64) error {
	target := uuid.Must(uuid.NewV7()).String()
	input := []byte(fmt.Sprintf(`{"id":%q}`, target))
	h, err := jsondoc.Hash(input)
	if err != nil {
		return err
	}
	c := capability.Call{Name: "record-payment", Principal: p, Via: capability.PathREST, Input: input, InputHash: h}
	return store.WithTx(ctx, b.db, func(ctx context.Context, tx pgx.Tx) error {
		_, err := gate.AuthorizeTx(ctx, tx, c, capability.Target{Type: "invoice", ID: target, Version: 1,
			Amount: amount, Currency: "EUR", CustomerID: customer, Snapshot: []byte(`{}`)})
		return err
	})
}

// A windowed tier of a governed bound capability, by requester: calls
// racing from one requester cannot all slip under it (the scope's lock
// serialises their sums), another requester has a window of their own,
// and a week later the window is empty again.
func TestWindowByRequesterUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setupPool(t)
	pol := approvals.Policy{Now: b.clock.Now, Capabilities: []string{"issue-invoice"}, Governed: []string{"record-payment"}}
	gate := approvals.NewGate(pol, outboxtest.Emitter(t))
	svc := approvals.NewService(b.db, pol, nil, outboxtest.Emitter(t))
	days, scope := 7, "requester"
	_, err := svc.PolicySet(b.ctx, b.admin, capability.PathCLI, approvals.RuleInput{Capability: "record-payment", Currency: "EUR",
		MinAmount: minor(100_000), Approvers: 1, WindowDays: &days, Scope: &scope}, etag.IfMatch{})
	require.NoError(t, err)
	customer := uuid.Must(uuid.NewV7())

	// 12 payments of 400.00 at once: 400 and 800 stay under 1,000.00, so
	// exactly two go through; the rest cross it and ask an approver.
	var through, asked atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.pay(b.ctx, gate, b.clerk, customer, 40_000)
			switch {
			case err == nil:
				through.Add(1)
			case problem.HasCode(err, approvals.CodeApprovalRequired):
				asked.Add(1)
			default:
				t.Errorf("unexpected refusal: %v", err)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 2, through.Load())
	require.EqualValues(t, 10, asked.Load())
	require.Equal(t, 80_000, b.count(t, `SELECT sum(amount)::int FROM policy_effects WHERE requester = $1`, b.clerk.UserID))

	// Another requester, the same customer: a window of their own.
	require.NoError(t, b.pay(b.ctx, gate, b.clerk2, customer, 40_000))
	// A week on, the clerk's window is empty again.
	b.clock.Advance(7*24*time.Hour + time.Second)
	require.NoError(t, b.pay(b.ctx, gate, b.clerk, customer, 40_000))
	// Under the tier a governed bound call needs no one; at it, one.
	err = b.pay(b.ctx, gate, b.clerk, customer, 100_000)
	pe, ok := problem.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, approvals.CodeApprovalRequired, pe.Code)
	require.Equal(t, http.StatusForbidden, pe.Status)
	require.EqualValues(t, 1, pe.Extra["required_approvals"])
	b.verify(t)
}
