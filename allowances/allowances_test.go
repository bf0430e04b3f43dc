package allowances_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

type bundle struct {
	ctx                    context.Context
	h                      *apptest.Harness
	clerk, approver, admin string
	approverID, adminID    uuid.UUID
	customer               *invoices.Customer
}

func setup(t *testing.T) bundle {
	t.Helper()
	h := apptest.New(t, apptest.Options{})
	_, clerk := h.User(t, "clerk1", identity.RoleClerk)
	ap, approver := h.User(t, "approver1", identity.RoleApprover)
	ad, admin := h.User(t, "admin1", identity.RoleAdmin)
	ctx := context.Background()
	return bundle{ctx: ctx, h: h, clerk: clerk, approver: approver, admin: admin, approverID: ap.ID, adminID: ad.ID,
		customer: invoicetest.Customer(ctx, t, h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})}
}

// grantBody is an allowance for issuing to b's customer; over changes it.
func (b bundle) grantBody(over map[string]any) map[string]any {
	body := map[string]any{
		"capability": "issue", "customer_ids": []string{b.customer.ID.String()}, "currency": "EUR",
		"max_total": 900_000, "max_count": 100, "valid_until": time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339),
		"reason": "December's monthly run",
	}
	for k, v := range over {
		body[k] = v
	}
	return body
}

// grant asks for body as requester, has approver (b.approver if empty)
// approve it, asks again and returns the allowance.
func (b bundle) grant(t *testing.T, requester string, body map[string]any) map[string]any {
	t.Helper()
	r := b.h.Do(t, http.MethodPost, "/v1/allowances", requester, body)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	p := r.Problem(t)
	require.Equal(t, approvals.CodeApprovalRequired, p["code"])
	a := b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil)
	require.Equal(t, http.StatusOK, a.StatusCode, "%s", a.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/allowances", requester, body)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var out map[string]any
	r.JSON(t, &out)
	require.Equal(t, "/v1/allowances/"+out["id"].(string), r.Header.Get("Location"))
	return out
}

func (b bundle) drafts(t *testing.T, n int, lines []invoices.LineInput) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID, Lines: lines}).ID.String()
	}
	return ids
}

func (b bundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, query, args...).Scan(&n))
	return n
}

func TestGrantThenIssueUnderTheAllowance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := b.grantBody(map[string]any{"max_count": 2, "max_total": 50000})
	al := b.grant(t, b.clerk, body)
	require.Equal(t, "active", al["status"])
	require.EqualValues(t, 50000, al["remaining_total"])
	require.EqualValues(t, 2, al["remaining_count"])
	require.Equal(t, []any{"issue-invoice"}, al["capabilities"])
	require.Equal(t, []any{b.approverID.String()}, al["deciders"])
	id := al["id"].(string)

	// The same call once more is the same allowance, granted already.
	r := b.h.Do(t, http.MethodPost, "/v1/allowances", b.clerk, body)
	require.Equal(t, http.StatusConflict, r.StatusCode, "%s", r.Body)
	require.Equal(t, allowances.CodeExists, r.Problem(t)["code"])

	drafts := b.drafts(t, 3, nil) // 120.00 each
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+drafts[0]+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var inv map[string]any
	r.JSON(t, &inv)
	require.Equal(t, "issued", inv["status"])
	require.Equal(t, id, inv["allowance_id"])
	draw := inv["allowance"].(map[string]any)
	require.EqualValues(t, 38000, draw["remaining_total"])
	require.EqualValues(t, 1, draw["remaining_count"])
	require.Equal(t, "issued under allowance "+id+", 1 call(s) and 380.00 EUR left", draw["note"])

	// The chain: the draw, then the issue naming the allowance.
	var drawn, issued map[string]any
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->'data' FROM audit_events WHERE type = 'allowance.drawn' AND subject_id = $1`, id).Scan(&drawn))
	require.Equal(t, drafts[0], drawn["target_id"])
	require.EqualValues(t, 12000, drawn["amount"])
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->'data' FROM audit_events WHERE type = 'invoice.issued' AND subject_id = $1`, drafts[0]).Scan(&issued))
	require.Equal(t, id, issued["allowance_id"])
	require.Equal(t, drawn["invocation_id"], issued["invocation_id"])
	require.NotContains(t, issued, "approval_id")

	// The last call it holds, then none: the third asks.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+drafts[1]+"/issue", b.admin, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "an admin who decided nothing draws too: %s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+drafts[2]+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	require.Equal(t, approvals.CodeApprovalRequired, r.Problem(t)["code"])
}

func TestDecidersAndOutOfScopeCallsAskForAnApproval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The admin approves the clerk's allowance, so the admin's own
	// issues never draw it.
	body := b.grantBody(nil)
	r := b.h.Do(t, http.MethodPost, "/v1/allowances", b.clerk, body)
	p := r.Problem(t)
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.admin, nil).StatusCode)
	r = b.h.Do(t, http.MethodPost, "/v1/allowances", b.clerk, body)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)

	own := b.drafts(t, 1, nil)[0]
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+own+"/issue", b.admin, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	require.Equal(t, approvals.CodeApprovalRequired, r.Problem(t)["code"])

	// Another customer, another currency, another capability: outside.
	other := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{}).ID.String()
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+other+"/issue", b.clerk, nil)
	require.Equal(t, approvals.CodeApprovalRequired, r.Problem(t)["code"])
	usd := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID, Currency: "USD"}).ID.String()
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+usd+"/issue", b.clerk, nil)
	require.Equal(t, approvals.CodeApprovalRequired, r.Problem(t)["code"])
	del := b.drafts(t, 1, nil)[0]
	r = b.h.Do(t, http.MethodDelete, "/v1/invoices/"+del, b.clerk, nil)
	require.Equal(t, approvals.CodeApprovalRequired, r.Problem(t)["code"])

	// The clerk's call of the same draft the admin asked for draws, and
	// supersedes the admin's pending request.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+own+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM approval_requests WHERE target_id = $1 AND status = 'pending'`, own))
}

// TestPendingRequestSupersededByADraw: a call asked for an approval
// before the allowance was granted; called again, it draws, and its
// request leaves the inbox.
func TestPendingRequestSupersededByADraw(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.drafts(t, 1, nil)[0]
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil)
	pending := r.Problem(t)["approval_id"].(string)
	b.grant(t, b.clerk, b.grantBody(nil))
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var a map[string]any
	b.h.Do(t, http.MethodGet, "/v1/approvals/"+pending, b.approver, nil).JSON(t, &a)
	require.Equal(t, "superseded", a["status"])
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'approval.superseded' AND subject_id = $1 AND event->'data' ? 'allowance_id'`, pending))
}

// issueAll issues ids at once, one goroutine each, and returns how many
// were issued under allowance and how many answered APPROVAL_REQUIRED;
// anything else fails the test.
func (b bundle) issueAll(t *testing.T, ids []string, allowance string, started func()) (issued, asked int64) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		ok, q atomic.Int64
	)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil)
			switch r.StatusCode {
			case http.StatusOK:
				var inv map[string]any
				r.JSON(t, &inv)
				if inv["allowance_id"] != allowance {
					t.Errorf("issued without the allowance: %s", r.Body)
				}
				ok.Add(1)
				if started != nil {
					started()
				}
			case http.StatusForbidden:
				if c := r.Problem(t)["code"]; c != approvals.CodeApprovalRequired {
					t.Errorf("want APPROVAL_REQUIRED, got %s", r.Body)
				}
				q.Add(1)
			default:
				t.Errorf("unexpected %d: %s", r.StatusCode, r.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	return ok.Load(), q.Load()
}

// requireDrawn checks allowance id against what was issued: its draws
// in the chain are the issued invoices, and what is left is its caps
// less them.
func (b bundle) requireDrawn(t *testing.T, id string, issued int64, each, maxTotal int64, maxCount int) {
	t.Helper()
	require.EqualValues(t, issued, b.count(t, `SELECT count(*) FROM invoices WHERE status = 'issued'`))
	require.EqualValues(t, issued, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'allowance.drawn' AND subject_id = $1`, id))
	var al map[string]any
	r := b.h.Do(t, http.MethodGet, "/v1/allowances/"+id, b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	r.JSON(t, &al)
	require.EqualValues(t, maxTotal-issued*each, al["remaining_total"])
	require.EqualValues(t, int64(maxCount)-issued, al["remaining_count"])
}

// 64 issues at once under an allowance of 10 calls: exactly 10 draw it,
// the other 54 ask for an approval.
func TestConcurrentIssuesNeverOverdrawTheCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	al := b.grant(t, b.clerk, b.grantBody(map[string]any{"max_count": 10}))
	ids := b.drafts(t, 64, nil)
	issued, asked := b.issueAll(t, ids, al["id"].(string), nil)
	require.EqualValues(t, 10, issued)
	require.EqualValues(t, 54, asked)
	b.requireDrawn(t, al["id"].(string), issued, 12000, 900_000, 10)
	require.Equal(t, 54, b.count(t, `SELECT count(*) FROM approval_requests WHERE capability = 'issue-invoice' AND status = 'pending'`))
	r := b.h.Do(t, http.MethodGet, "/v1/allowances/"+al["id"].(string), b.clerk, nil)
	var got map[string]any
	r.JSON(t, &got)
	require.Equal(t, "exhausted", got["status"])
}

// 64 issues of 120.00 at once under an allowance of 1,319.99: exactly
// 10 fit.
func TestConcurrentIssuesNeverOverdrawTheTotal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	al := b.grant(t, b.clerk, b.grantBody(map[string]any{"max_total": 11*12000 - 1}))
	ids := b.drafts(t, 64, nil)
	issued, asked := b.issueAll(t, ids, al["id"].(string), nil)
	require.EqualValues(t, 10, issued)
	require.EqualValues(t, 54, asked)
	b.requireDrawn(t, al["id"].(string), issued, 12000, 11*12000-1, 100)
}

// A revoke lands while 64 issues run: no draw is after it in the chain
// (draws and the revoke take the allowance's row lock and append to the
// chain before they commit, so the chain's order is their commit
// order), and every issue after it asks for an approval.
func TestRevokeDuringARunStopsTheDraws(t *testing.T) {
	t.Parallel()
	b := setup(t)
	al := b.grant(t, b.clerk, b.grantBody(map[string]any{"max_count": 64}))
	id := al["id"].(string)
	ids := b.drafts(t, 64, nil)
	var (
		once    sync.Once
		seen    atomic.Int64
		revoked = make(chan map[string]any, 1)
	)
	issued, asked := b.issueAll(t, ids, id, func() {
		if seen.Add(1) == 3 {
			once.Do(func() {
				go func() {
					r := b.h.Do(t, http.MethodPost, "/v1/allowances/"+id+"/revoke", b.approver, map[string]any{"reason": "the run is wrong"})
					var out map[string]any
					if r.StatusCode == http.StatusOK {
						r.JSON(t, &out)
					} else {
						t.Errorf("revoke: %d %s", r.StatusCode, r.Body)
					}
					revoked <- out
				}()
			})
		}
	})
	out := <-revoked
	require.Equal(t, "revoked", out["status"])
	require.EqualValues(t, 64, issued+asked)
	t.Logf("%d issued under the allowance, %d asked for an approval", issued, asked)
	var revokedAt, lastDraw int64
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT seq FROM audit_events WHERE type = 'allowance.revoked' AND subject_id = $1`, id).Scan(&revokedAt))
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT coalesce(max(seq), 0) FROM audit_events WHERE type = 'allowance.drawn' AND subject_id = $1`, id).Scan(&lastDraw))
	require.Less(t, lastDraw, revokedAt, "a draw committed after the revoke")
	// What the revoke saw left is what is left: nothing drew since.
	b.requireDrawn(t, id, issued, 12000, 900_000, 64)
	require.EqualValues(t, 64-issued, out["remaining_count"])
	// After it, every call in its scope asks.
	later := b.drafts(t, 4, nil)
	issued, asked = b.issueAll(t, later, id, nil)
	require.Zero(t, issued)
	require.EqualValues(t, 4, asked)
}

func TestRevokeIsTheApproversAndAdminsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.grant(t, b.clerk, b.grantBody(nil))["id"].(string)
	r := b.h.Do(t, http.MethodPost, "/v1/allowances/"+id+"/revoke", b.clerk, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/allowances/"+id+"/revoke", b.admin, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/allowances/"+id+"/revoke", b.approver, nil)
	require.Equal(t, http.StatusConflict, r.StatusCode, "%s", r.Body)
	require.Equal(t, allowances.CodeNotActive, r.Problem(t)["code"])
	r = b.h.Do(t, http.MethodPost, "/v1/allowances/"+uuid.NewString()+"/revoke", b.admin, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)

	var list map[string]any
	r = b.h.Do(t, http.MethodGet, "/v1/allowances?limit=5", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &list)
	require.Len(t, list["data"], 1)
	require.Equal(t, "revoked", list["data"].([]any)[0].(map[string]any)["status"])
}

// A budget is approved as a call of what it covers for its whole total
// would be: with issues of 5,000.00 EUR and more needing two approvers,
// so does an allowance to issue up to 5,000.00 EUR, and one for credits
// (which that tier does not govern) does not.
func TestGrantNeedsTheTierOfItsTotal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", b.admin, map[string]any{
		"capability": "issue-invoice", "currency": "EUR", "min_amount": 500_000, "approvers": 2})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	for _, tc := range []struct {
		capability string
		total      int64
		required   int
	}{{"issue", 500_000, 2}, {"issue", 499_999, 1}, {"credit", 500_000, 1}} {
		r = b.h.Do(t, http.MethodPost, "/v1/allowances", b.clerk, b.grantBody(map[string]any{"capability": tc.capability, "max_total": tc.total}))
		p := r.Problem(t)
		require.Equal(t, approvals.CodeApprovalRequired, p["code"])
		require.EqualValues(t, tc.required, p["required_approvals"], "%s up to %d", tc.capability, tc.total)
	}
}

func TestBadGrantsAreRefusedWritingNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	usd := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Currency: "USD"})
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name  string
		over  map[string]any
		field string
	}{
		{"negative total", map[string]any{"max_total": -1}, "max_total"},
		{"zero total", map[string]any{"max_total": 0}, "max_total"},
		{"negative count", map[string]any{"max_count": -5}, "max_count"},
		{"zero count", map[string]any{"max_count": 0}, "max_count"},
		{"count over the bound", map[string]any{"max_count": 100001}, "max_count"},
		{"past its expiry", map[string]any{"valid_until": past}, "valid_until"},
		{"over a year", map[string]any{"valid_until": time.Now().Add(400 * 24 * time.Hour).UTC().Format(time.RFC3339)}, "valid_until"},
		{"unknown capability", map[string]any{"capability": "delete"}, "capability"},
		{"currency mismatch", map[string]any{"customer_ids": []string{usd.ID.String()}}, "customer_ids/0"},
		{"unknown currency", map[string]any{"currency": "XYZ"}, "currency"},
		{"unknown customer", map[string]any{"customer_ids": []string{uuid.NewString()}}, "customer_ids/0"},
		{"no customers", map[string]any{"customer_ids": []string{}}, "customer_ids"},
		{"a customer twice", map[string]any{"customer_ids": []string{b.customer.ID.String(), b.customer.ID.String()}}, "customer_ids"},
		{"no reason", map[string]any{"reason": " "}, "reason"},
		{"bidi reason", map[string]any{"reason": "run \u202e"}, "reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.written(t)
			r := b.h.Do(t, http.MethodPost, "/v1/allowances", b.clerk, b.grantBody(tc.over))
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
			requireField(t, r.Problem(t), tc.field)
			require.Equal(t, before, b.written(t))
		})
	}
	// An allowance approved but past its expiry by the time it is used
	// is refused the same way, and nothing is created.
	body := b.grantBody(map[string]any{"valid_until": time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)})
	r := b.h.Do(t, http.MethodPost, "/v1/allowances", b.clerk, body)
	p := r.Problem(t)
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil).StatusCode)
	time.Sleep(2 * time.Second)
	before := b.written(t)
	r = b.h.Do(t, http.MethodPost, "/v1/allowances", b.clerk, body)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
	requireField(t, r.Problem(t), "valid_until")
	require.Equal(t, before, b.written(t))
	require.Zero(t, b.count(t, `SELECT count(*) FROM allowances`))

	// An approver decides allowances; a clerk or an admin asks.
	r = b.h.Do(t, http.MethodPost, "/v1/allowances", b.approver, b.grantBody(nil))
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
}

// written counts what a refused grant must leave untouched.
func (b bundle) written(t *testing.T) string {
	t.Helper()
	return fmt.Sprint(b.count(t, `SELECT count(*) FROM allowances`), b.count(t, `SELECT count(*) FROM approval_requests`),
		b.count(t, `SELECT count(*) FROM audit_events`))
}

func requireField(t *testing.T, p map[string]any, field string) {
	t.Helper()
	errs, _ := p["errors"].([]any)
	for _, e := range errs {
		if e.(map[string]any)["field"] == field {
			return
		}
	}
	t.Fatalf("no error names field %q: %v", field, p)
}

// An allowance stands in only for calls that need no more approvers
// than approved it: tightened after the grant, the policy asks two for
// an invoice of 120.00, and the call asks them rather than draw a budget
// one approver let through.
func TestAllowanceNeverCoversACallThatNeedsMoreApprovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.grant(t, b.clerk, b.grantBody(nil))
	r := b.h.Do(t, http.MethodPost, "/v1/approval-policy/rules", b.admin, map[string]any{
		"capability": "issue-invoice", "currency": "EUR", "min_amount": 5000, "approvers": 2})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+b.drafts(t, 1, nil)[0]+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	p := r.Problem(t)
	require.Equal(t, approvals.CodeApprovalRequired, p["code"])
	require.EqualValues(t, 2, p["required_approvals"])
	// Below the new tier, it draws.
	small := b.drafts(t, 1, []invoices.LineInput{{Description: "Small", Quantity: quantity.One, UnitAmount: 1000}})[0]
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+small+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
}

// The inbox lists the allowances in force, and no longer one revoked.
func TestInboxListsAllowancesInForce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.grant(t, b.clerk, b.grantBody(nil))["id"].(string)
	sid, _, err := web.SessionCreate(b.ctx, b.h.Pool, b.approverID, time.Hour)
	require.NoError(t, err)
	cookie := []string{"Cookie", web.SessionCookie + "=" + sid}
	r := b.h.Do(t, http.MethodGet, "/inbox", "", nil, cookie...)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, string(r.Body), `data-allowance-id="`+id+`"`)
	require.Contains(t, string(r.Body), "9,000.00 EUR</span> of 9,000.00 EUR, 100 of 100 calls")
	require.Equal(t, http.StatusOK, b.h.Do(t, http.MethodPost, "/v1/allowances/"+id+"/revoke", b.approver, nil).StatusCode)
	r = b.h.Do(t, http.MethodGet, "/inbox", "", nil, cookie...)
	require.NotContains(t, string(r.Body), id)
	require.Contains(t, string(r.Body), "No standing allowance is in force")
}

// A credit allowance: a credit note draws it, and says so instead of
// naming an approval.
func TestCreditNoteUnderAnAllowance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.grant(t, b.clerk, b.grantBody(map[string]any{"capability": "credit", "max_total": 5000, "max_count": 5}))["id"].(string)
	inv := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+inv+"/credit-notes", b.clerk, map[string]any{"reason": "goodwill", "amount": 3000})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var cn map[string]any
	r.JSON(t, &cn)
	require.Nil(t, cn["approval_id"])
	require.Equal(t, id, cn["allowance_id"])
	require.Equal(t, "credited under allowance "+id+", 4 call(s) and 20.00 EUR left", cn["allowance"].(map[string]any)["note"])
	r = b.h.Do(t, http.MethodGet, "/v1/credit-notes/"+cn["id"].(string), b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	// Over what is left: asks.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+inv+"/credit-notes", b.clerk, map[string]any{"reason": "more goodwill", "amount": 2001})
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	require.Equal(t, approvals.CodeApprovalRequired, r.Problem(t)["code"])
}

// Voids and payments pass the gate too (ADR-0022 §1): a void allowance
// lets a void through, a payments allowance a payment above the tier
// that would otherwise ask.
func TestVoidAndPaymentUnderAllowances(t *testing.T) {
	t.Parallel()
	b := setup(t)
	void := b.grant(t, b.clerk, b.grantBody(map[string]any{"capability": "void", "max_count": 1}))["id"].(string)
	pay := b.grant(t, b.clerk, b.grantBody(map[string]any{"capability": "payments", "max_total": 2_000_000, "max_count": 1}))["id"].(string)
	voided := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+voided+"/void", b.clerk, map[string]any{"reason": "sent twice"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var inv map[string]any
	r.JSON(t, &inv)
	require.Equal(t, "void", inv["status"])
	require.Equal(t, void, inv["allowance_id"])

	big := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID,
		Lines: []invoices.LineInput{{Description: "Project", Quantity: quantity.One, UnitAmount: 1_500_000}}}).ID.String()
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+big+"/mark-paid", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &inv)
	require.Equal(t, "paid", inv["status"])
	require.Equal(t, pay, inv["allowance_id"])
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM policy_effects WHERE allowance_id = $1`, pay))
}
