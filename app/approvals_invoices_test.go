package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/clocktest"
	"github.com/invoiced/invoiced/quantity"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

type gated struct {
	h        *apptest.Harness
	clock    *clocktest.Clock
	clerk    *identity.User
	clerkTok string
	bobTok   string
	carolTok string
	adminTok string
	ctx      context.Context
}

// setupGated starts the service with a settable approval clock and users
// of every role.
func setupGated(t *testing.T) *gated {
	t.Helper()
	clk := clocktest.New(time.Now().UTC())
	h := apptest.New(t, apptest.Options{Config: app.Config{Approvals: approvals.Policy{Now: clk.Now}}})
	g := &gated{h: h, clock: clk, ctx: context.Background()}
	g.clerk, g.clerkTok = h.User(t, "clara", identity.RoleClerk)
	_, g.bobTok = h.User(t, "bob", identity.RoleApprover)
	_, g.carolTok = h.User(t, "carol", identity.RoleApprover)
	_, g.adminTok = h.User(t, "ada", identity.RoleAdmin)
	return g
}

func (g *gated) draft(t *testing.T, lines ...invoices.LineInput) *invoices.Invoice {
	t.Helper()
	return invoicetest.Draft(g.ctx, t, g.h.Pool, invoicetest.DraftOpts{Lines: lines})
}

// issue calls POST /v1/invoices/{id}/issue as the clerk.
func (g *gated) issue(t *testing.T, id string) *apptest.Response {
	t.Helper()
	return g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, nil)
}

// refusedWith asserts a problem response and returns its approval_id.
func refusedWith(t *testing.T, resp *apptest.Response, status int, code string) string {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, string(resp.Body))
	p := resp.Problem(t)
	require.Equal(t, code, p["code"], string(resp.Body))
	id, _ := p["approval_id"].(string)
	return id
}

func (g *gated) decide(t *testing.T, tok, id, decision string, body any) {
	t.Helper()
	resp := g.h.Do(t, "POST", "/v1/approvals/"+id+"/"+decision, tok, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

func (g *gated) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, g.h.Pool.QueryRow(g.ctx, q, args...).Scan(&n))
	return n
}

func (g *gated) status(t *testing.T, id string) string {
	t.Helper()
	resp := g.h.Do(t, "GET", "/v1/invoices/"+id, g.clerkTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	var inv invoices.Invoice
	resp.JSON(t, &inv)
	return string(inv.Status)
}

// Done-when 1 and 3: required, reused on every path, approved → issued
// once, then INVALID_TRANSITION with nothing created or consumed.
func TestIssueNeedsApprovalOnEveryPath(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	inv := g.draft(t)
	id := inv.ID.String()

	first := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.NotEmpty(t, first)
	require.Equal(t, first, refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired))
	// The admin too: no role bypasses the gate.
	resp := g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.adminTok, nil)
	require.Equal(t, first, refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired))
	// Through the contextual-binding path: the same effective input, the
	// same request.
	resp = g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.clerkTok, map[string]any{"input": map[string]any{"invoice_id": id}})
	require.Equal(t, first, refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalRequired))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests`))

	// The approver sees the snapshot: the invoice with lines, totals and
	// customer.
	var a approvals.Approval
	g.h.Do(t, "GET", "/v1/approvals/"+first, g.bobTok, nil).JSON(t, &a)
	require.Equal(t, approvals.StatusPending, a.Status)
	var snap invoices.Snapshot
	require.NoError(t, jsonUnmarshal(a.Snapshot, &snap))
	require.Equal(t, inv.Total, snap.Total)
	require.Len(t, snap.Lines, 1)
	require.NotNil(t, snap.Customer)
	require.Equal(t, "Acme GmbH", snap.Customer.Name)

	g.decide(t, g.bobTok, first, "approve", nil)
	resp = g.issue(t, id)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, "issued", g.status(t, id))

	before := g.count(t, `SELECT count(*) FROM audit_events`)
	refusedWith(t, g.issue(t, id), http.StatusConflict, invoices.CodeInvalidTransition)
	resp = g.h.Do(t, "POST", "/v1/capabilities/issue-invoice/invoke", g.clerkTok, map[string]any{"input": map[string]any{"invoice_id": id}})
	refusedWith(t, resp, http.StatusConflict, invoices.CodeInvalidTransition)
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests`), "nothing created")
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`))
	require.Equal(t, before, g.count(t, `SELECT count(*) FROM audit_events`), "nothing written")
	_, err := audit.Verify(g.ctx, g.h.Pool)
	require.NoError(t, err)
}

func TestDeleteNeedsApprovalAndConsumesIt(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	id := g.draft(t).ID.String()
	del := func() *apptest.Response { return g.h.Do(t, "DELETE", "/v1/invoices/"+id, g.clerkTok, nil) }
	aid := refusedWith(t, del(), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, aid, "approve", nil)
	resp := del()
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(resp.Body))
	resp = g.h.Do(t, "GET", "/v1/invoices/"+id, g.clerkTok, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(resp.Body))
	require.Equal(t, http.StatusNotFound, del().StatusCode)

	var a approvals.Approval
	g.h.Do(t, "GET", "/v1/approvals/"+aid, g.bobTok, nil).JSON(t, &a)
	require.Equal(t, approvals.StatusConsumed, a.Status)
	require.NotNil(t, a.ConsumedBy)
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests`))
}

// Done-when 4.
func TestConcurrentIssueCallsOneEffect(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	id := g.draft(t).ID.String()
	aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, aid, "approve", nil)

	const n = 64
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		ok      atomic.Int64
		invalid atomic.Int64
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp := g.h.Do(t, "POST", "/v1/invoices/"+id+"/issue", g.clerkTok, nil)
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusConflict:
				invalid.Add(1)
			default:
				t.Errorf("unexpected %d: %s", resp.StatusCode, resp.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, ok.Load())
	require.EqualValues(t, n-1, invalid.Load())
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM invoices WHERE status = 'issued'`))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests WHERE status = 'consumed'`))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM approval_requests`))
	require.Equal(t, 1, g.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.issued' AND subject_id = $1`, id))
	_, err := audit.Verify(g.ctx, g.h.Pool)
	require.NoError(t, err)
}

// Done-when 5.
func TestApprovalBindsContentCapabilityAndTarget(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	x := g.draft(t).ID.String()
	y := g.draft(t).ID.String()

	// Edited after the request: stale, and the next call asks anew.
	aid := refusedWith(t, g.issue(t, x), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, aid, "approve", nil)
	resp := g.h.Do(t, "PATCH", "/v1/invoices/"+x, g.clerkTok, map[string]any{"memo": "changed after approval"})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, aid, refusedWith(t, g.issue(t, x), http.StatusConflict, approvals.CodeApprovalStale))
	require.Equal(t, "draft", g.status(t, x))
	fresh := refusedWith(t, g.issue(t, x), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.NotEqual(t, aid, fresh)

	// An approval to delete X cannot issue X.
	delX := refusedWith(t, g.h.Do(t, "DELETE", "/v1/invoices/"+x, g.clerkTok, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, delX, "approve", nil)
	require.Equal(t, fresh, refusedWith(t, g.issue(t, x), http.StatusForbidden, approvals.CodeApprovalRequired))
	require.Equal(t, "draft", g.status(t, x))

	// An approval for X cannot act on Y.
	g.decide(t, g.bobTok, fresh, "approve", nil)
	yReq := refusedWith(t, g.issue(t, y), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.NotEqual(t, fresh, yReq)
	require.Equal(t, "draft", g.status(t, y))

	// X's own approval still works.
	resp = g.issue(t, x)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

// Done-when 6.
func TestIssueApprovalExpiresAndDenies(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	x := g.draft(t).ID.String()
	y := g.draft(t).ID.String()

	aid := refusedWith(t, g.issue(t, x), http.StatusForbidden, approvals.CodeApprovalRequired)
	g.decide(t, g.bobTok, aid, "approve", nil)
	g.clock.Advance(25 * time.Hour) // approved-unused TTL is 24 h
	require.Equal(t, aid, refusedWith(t, g.issue(t, x), http.StatusForbidden, approvals.CodeApprovalExpired))
	require.Equal(t, "draft", g.status(t, x))
	require.NotEqual(t, aid, refusedWith(t, g.issue(t, x), http.StatusForbidden, approvals.CodeApprovalRequired))

	did := refusedWith(t, g.issue(t, y), http.StatusForbidden, approvals.CodeApprovalRequired)
	resp := g.h.Do(t, "POST", "/v1/approvals/"+did+"/deny", g.bobTok, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "a denial needs a reason: %s", resp.Body)
	g.decide(t, g.bobTok, did, "deny", map[string]string{"reason": "customer disputes the hours"})
	resp = g.issue(t, y)
	require.Equal(t, did, refusedWith(t, resp, http.StatusForbidden, approvals.CodeApprovalDenied))
	require.Contains(t, string(resp.Body), "customer disputes the hours")
	require.Equal(t, "draft", g.status(t, y))
}

// Done-when 7.
func TestHighValueIssueNeedsTwoApprovers(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	// 10,000.00 EUR exactly, no tax: at the threshold.
	id := g.draft(t, invoices.LineInput{Description: "Annual licence", Quantity: 1 * quantity.One, UnitAmount: 1_000_000}).ID.String()
	aid := refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired)

	g.decide(t, g.bobTok, aid, "approve", nil)
	g.decide(t, g.bobTok, aid, "approve", nil) // the same approver twice counts once
	require.Equal(t, aid, refusedWith(t, g.issue(t, id), http.StatusForbidden, approvals.CodeApprovalRequired))
	require.Equal(t, "draft", g.status(t, id))

	g.decide(t, g.carolTok, aid, "approve", nil)
	resp := g.issue(t, id)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
