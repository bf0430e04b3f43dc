package invoices_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

type httpBundle struct {
	ctx      context.Context
	h        *apptest.Harness
	clerk    string
	approver string
	admin    string
	customer *invoices.Customer
}

func setupHTTP(t *testing.T) httpBundle {
	t.Helper()
	h := apptest.New(t, apptest.Options{})
	_, clerk := h.User(t, "clerk1", identity.RoleClerk)
	_, approver := h.User(t, "approver1", identity.RoleApprover)
	_, admin := h.User(t, "admin1", identity.RoleAdmin)
	ctx := context.Background()
	return httpBundle{ctx: ctx, h: h, clerk: clerk, approver: approver, admin: admin,
		customer: invoicetest.Customer(ctx, t, h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})}
}

// counts is what a refused request must leave untouched.
type counts struct{ customers, invoices, lines, audit, series int }

func (b httpBundle) counts(t *testing.T) counts {
	t.Helper()
	var c counts
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT
		(SELECT count(*) FROM customers), (SELECT count(*) FROM invoices), (SELECT count(*) FROM invoice_lines),
		(SELECT count(*) FROM audit_events), (SELECT count(*) FROM invoice_number_series)`).
		Scan(&c.customers, &c.invoices, &c.lines, &c.audit, &c.series))
	return c
}

func requireProblem(t *testing.T, r *apptest.Response, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.StatusCode, "body: %s", r.Body)
	p := r.Problem(t)
	require.Equal(t, code, p["code"], "body: %s", r.Body)
	return p
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

func line(desc string, qty, unit, bps int64) map[string]any {
	return map[string]any{"description": desc, "quantity": qty, "unit_amount": unit, "tax_rate_bps": bps}
}

func TestCustomerAndDraftHTTP(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)

	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.clerk, map[string]any{"name": "Tokyo KK", "email": "ap@tokyo.example", "currency": "JPY"})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var c map[string]any
	r.JSON(t, &c)
	require.Equal(t, "JPY", c["currency"])
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	require.Equal(t, "/v1/customers/"+c["id"].(string), r.Header.Get("Location"))
	id, err := uuid.Parse(c["id"].(string))
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), id.Version())

	// A draft in the customer's currency by default; amounts in yen.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, map[string]any{
		"customer_id": c["id"], "memo": "March", "due_date": "2999-01-31",
		"lines": []any{line("Widget", 3, 1005, 1950), line("Fee", 1, 25, 1000)},
	})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var inv map[string]any
	r.JSON(t, &inv)
	require.Equal(t, "JPY", inv["currency"])
	require.Equal(t, "draft", inv["status"])
	require.Nil(t, inv["number"])
	require.Equal(t, "2999-01-31", inv["due_date"])
	require.EqualValues(t, 3015+25, inv["subtotal"])
	require.EqualValues(t, 588+2, inv["tax_total"]) // 587.925 → 588, 2.5 → 2
	require.EqualValues(t, 3040+590, inv["total"])
	lines := inv["lines"].([]any)
	require.EqualValues(t, 3015, lines[0].(map[string]any)["amount"])
	require.EqualValues(t, 2, lines[1].(map[string]any)["tax_amount"])

	r = b.h.Do(t, http.MethodGet, "/v1/invoices/"+inv["id"].(string), b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, `"1"`, r.Header.Get("ETag"))

	// Approvers read but do not write.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices", b.approver, map[string]any{"customer_id": c["id"]})
	requireProblem(t, r, http.StatusForbidden, "FORBIDDEN")

	// Every mutation is audited with its principal and path.
	var actor, via string
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->>'actor', event->>'via' FROM audit_events WHERE type = 'invoice.draft_created' AND subject_id = $1`, inv["id"]).Scan(&actor, &via))
	require.Equal(t, "clerk1", actor)
	require.Equal(t, "rest", via)

	// The same capability over /invoke, audited as a binding.
	r = b.h.Do(t, http.MethodPost, "/v1/capabilities/update-draft-invoice/invoke", b.clerk, map[string]any{
		"input": map[string]any{"invoice_id": inv["id"], "lines": []any{line("Only", 1, 100, 0)}},
	})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var out struct{ Output map[string]any }
	r.JSON(t, &out)
	require.EqualValues(t, 100, out.Output["total"])
	require.EqualValues(t, 2, out.Output["version"])
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->>'via' FROM audit_events WHERE type = 'invoice.draft_updated' AND subject_id = $1`, inv["id"]).Scan(&via))
	require.Equal(t, "binding", via)
}

// TestConcurrentIssueOneWinner: one approval, many concurrent issue
// attempts: exactly one issues (one number taken), the rest are refused.
func TestConcurrentIssueOneWinner(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	path := "/v1/invoices/" + d.ID.String() + "/issue"
	r := b.h.Do(t, http.MethodPost, path, b.clerk, nil)
	p := requireProblem(t, r, http.StatusForbidden, approvals.CodeApprovalRequired)
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, map[string]any{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)

	const n = 12
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- b.h.Do(t, http.MethodPost, path, b.clerk, nil).StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	won := 0
	for s := range statuses {
		if s == http.StatusOK {
			won++
		} else {
			require.Contains(t, []int{http.StatusConflict, http.StatusForbidden}, s)
		}
	}
	require.Equal(t, 1, won)
	var issued, lastSeq int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM invoices WHERE status = 'issued'),
		(SELECT coalesce(sum(last_seq), 0) FROM invoice_number_series)`).Scan(&issued, &lastSeq))
	require.Equal(t, 1, issued)
	require.Equal(t, 1, lastSeq)
}

func TestDeleteWithApproval(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	path := "/v1/invoices/" + d.ID.String()
	r := b.h.Do(t, http.MethodDelete, path, b.clerk, nil)
	p := requireProblem(t, r, http.StatusForbidden, approvals.CodeApprovalRequired)
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, map[string]any{"reason": "ok"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodDelete, path, b.clerk, nil)
	require.Equal(t, http.StatusNoContent, r.StatusCode, "%s", r.Body)
	requireProblem(t, b.h.Do(t, http.MethodGet, path, b.clerk, nil), http.StatusNotFound, "NOT_FOUND")
	var actor, via string
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->>'actor', event->>'via' FROM audit_events WHERE type = 'invoice.deleted' AND subject_id = $1`, d.ID.String()).Scan(&actor, &via))
	require.Equal(t, "clerk1", actor)
	require.Equal(t, "rest", via)
}

// TestConcurrentIfMatch: many PATCHes based on the same ETag: one wins,
// the others are 412 and change nothing.
func TestConcurrentIfMatch(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	const n = 12
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- b.h.Do(t, http.MethodPatch, "/v1/invoices/"+d.ID.String(), b.clerk,
				map[string]any{"memo": fmt.Sprint("writer ", i)}, "If-Match", `"1"`).StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	won := 0
	for s := range statuses {
		if s == http.StatusOK {
			won++
		} else {
			require.Equal(t, http.StatusPreconditionFailed, s)
		}
	}
	require.Equal(t, 1, won)
	got, err := invoices.InvoiceGetByID(b.ctx, b.h.Pool, d.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2), got.Version)
}

func TestCapabilitiesList(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	r := b.h.Do(t, http.MethodGet, "/v1/capabilities", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	var body struct {
		Data []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Risk        string          `json:"risk"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
	}
	r.JSON(t, &body)
	risks := map[string]string{}
	for _, d := range body.Data {
		risks[d.Name] = d.Risk
		require.NotEmpty(t, d.Description)
		require.NotEmpty(t, d.InputSchema)
	}
	require.Equal(t, map[string]string{
		"list-customers": "read", "get-customer": "read", "create-customer": "bound", "update-customer": "bound",
		"list-invoices": "read", "get-invoice": "read", "create-draft-invoice": "bound", "update-draft-invoice": "bound",
		"void-invoice": "consequential", "mark-invoice-paid": "bound", "issue-invoice": "consequential", "delete-invoice": "consequential",
		"record-payment": "bound", "reverse-payment": "bound", "list-payments": "read",
		"issue-credit-note": "consequential", "list-credit-notes": "read", "get-credit-note": "read", "receivables-report": "read",
		"send-invoice": "bound", "send-credit-note": "bound", "list-invoice-sendings": "read", "list-credit-note-sendings": "read",
		"grant-allowance": "consequential", "list-allowances": "read", "get-allowance": "read",
		"list-upcoming-reminders": "read", "send-reminder": "bound", "set-invoice-dispute": "bound", "set-customer-hold": "bound",
		"create-schedule": "bound", "update-schedule": "bound", "list-schedules": "read",
	}, risks)

	r = b.h.Do(t, http.MethodPost, "/v1/capabilities/no-such-thing/invoke", b.clerk, map[string]any{"input": map[string]any{}})
	requireProblem(t, r, http.StatusNotFound, "UNKNOWN_CAPABILITY")
}

// TestConsequentialNeedsApproval: issue-invoice and delete-invoice take no
// effect on any path for any role without an approval; once an approver
// approves, the requester's retry issues the invoice with the first number.
func TestConsequentialNeedsApproval(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	id := draft.ID.String()
	invoiceEvents := func() int {
		var n int
		require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_events WHERE type LIKE 'invoice.%'`).Scan(&n))
		return n
	}
	before := b.counts(t)
	eventsBefore := invoiceEvents()

	var clerkIssueApproval string
	for _, who := range []struct {
		name, token, code string
	}{
		{"clerk", b.clerk, approvals.CodeApprovalRequired},
		{"admin", b.admin, approvals.CodeApprovalRequired},
		// Approvers decide approvals; they do not issue or delete.
		{"approver", b.approver, "FORBIDDEN"},
	} {
		for i, req := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPost, "/v1/invoices/" + id + "/issue", nil},
			{http.MethodDelete, "/v1/invoices/" + id, nil},
			{http.MethodPost, "/v1/capabilities/issue-invoice/invoke", map[string]any{"input": map[string]any{"invoice_id": id}}},
			{http.MethodPost, "/v1/capabilities/delete-invoice/invoke", map[string]any{"input": map[string]any{"invoice_id": id}}},
		} {
			r := b.h.Do(t, req.method, req.path, who.token, req.body)
			p := requireProblem(t, r, http.StatusForbidden, who.code)
			if who.code == approvals.CodeApprovalRequired {
				require.NotEmpty(t, p["approval_id"], "%s %s", req.method, req.path)
				if who.name == "clerk" && i == 0 {
					clerkIssueApproval = p["approval_id"].(string)
				}
			}
		}
	}
	after := b.counts(t)
	require.Equal(t, before.invoices, after.invoices)
	require.Equal(t, before.lines, after.lines)
	require.Zero(t, after.series, "no number was taken")
	require.Equal(t, eventsBefore, invoiceEvents(), "no invoice effect was audited")
	got, err := invoices.InvoiceGetByID(b.ctx, b.h.Pool, draft.ID)
	require.NoError(t, err)
	require.Equal(t, invoices.StatusDraft, got.Status)
	require.Nil(t, got.Number)
	require.Equal(t, int64(1), got.Version)

	// The approver approves the clerk's request; the clerk's retry issues.
	r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+clerkIssueApproval+"/approve", b.approver, map[string]any{"reason": "checked"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var inv invoices.Invoice
	r.JSON(t, &inv)
	require.Equal(t, invoices.StatusIssued, inv.Status)
	require.Equal(t, fmt.Sprintf("INV-%d-000001", time.Now().UTC().Year()), *inv.Number)
	require.Equal(t, `"2"`, r.Header.Get("ETag"))
	var approvalID string
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->'data'->>'approval_id' FROM audit_events WHERE type = 'invoice.issued' AND subject_id = $1`, id).Scan(&approvalID))
	require.Equal(t, clerkIssueApproval, approvalID)

	// State checks come first: issuing or deleting an issued invoice is a
	// 409 naming its status, not a request for approval.
	before = b.counts(t)
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+id+"/issue", b.admin, nil)
	p := requireProblem(t, r, http.StatusConflict, invoices.CodeInvalidTransition)
	require.Equal(t, "issued", p["current_status"])
	r = b.h.Do(t, http.MethodDelete, "/v1/invoices/"+id, b.admin, nil)
	p = requireProblem(t, r, http.StatusConflict, invoices.CodeInvalidTransition)
	require.Equal(t, "issued", p["current_status"])
	require.Equal(t, before, b.counts(t))
}

func TestTransitionsHTTP(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	a := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	c := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})

	conflict := func(method, path string, body any, status string) {
		t.Helper()
		r := b.h.Do(t, method, path, b.clerk, body)
		p := requireProblem(t, r, http.StatusConflict, invoices.CodeInvalidTransition)
		require.Equal(t, status, p["current_status"])
	}
	conflict(http.MethodPost, "/v1/invoices/"+draft.ID.String()+"/void", nil, "draft")
	conflict(http.MethodPost, "/v1/invoices/"+draft.ID.String()+"/mark-paid", nil, "draft")
	conflict(http.MethodPatch, "/v1/invoices/"+a.ID.String(), map[string]any{"memo": "x"}, "issued")

	r := b.approved(t, http.MethodPost, "/v1/invoices/"+a.ID.String()+"/void", map[string]any{"reason": "duplicate"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var inv invoices.Invoice
	r.JSON(t, &inv)
	require.Equal(t, invoices.StatusVoid, inv.Status)
	require.NotNil(t, inv.VoidedAt)
	require.Equal(t, a.Number, inv.Number)
	conflict(http.MethodPost, "/v1/invoices/"+a.ID.String()+"/mark-paid", nil, "void")
	conflict(http.MethodPost, "/v1/invoices/"+a.ID.String()+"/void", nil, "void")

	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+c.ID.String()+"/mark-paid", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &inv)
	require.Equal(t, invoices.StatusPaid, inv.Status)
	conflict(http.MethodPost, "/v1/invoices/"+c.ID.String()+"/void", nil, "paid")
	conflict(http.MethodPatch, "/v1/invoices/"+c.ID.String(), map[string]any{"memo": "x"}, "paid")
}

func TestIfMatch(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	path := "/v1/invoices/" + d.ID.String()

	r := b.h.Do(t, http.MethodGet, path, b.clerk, nil)
	etag := r.Header.Get("ETag")
	require.Equal(t, `"1"`, etag)

	r = b.h.Do(t, http.MethodPatch, path, b.clerk, map[string]any{"memo": "a"}, "If-Match", `"2"`)
	p := requireProblem(t, r, http.StatusPreconditionFailed, "VERSION_MISMATCH")
	require.EqualValues(t, 1, p["current_version"])
	r = b.h.Do(t, http.MethodPatch, path, b.clerk, map[string]any{"memo": "a"}, "If-Match", `"garbage"`)
	requireProblem(t, r, http.StatusPreconditionFailed, "VERSION_MISMATCH")
	r = b.h.Do(t, http.MethodPatch, path, b.clerk, map[string]any{"memo": "a"}, "If-Match", "garbage")
	requireProblem(t, r, http.StatusBadRequest, "IF_MATCH_INVALID")

	r = b.h.Do(t, http.MethodPatch, path, b.clerk, map[string]any{"memo": "a"}, "If-Match", etag)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, `"2"`, r.Header.Get("ETag"))

	// The old ETag is now stale for every mutation.
	r = b.h.Do(t, http.MethodPatch, path, b.clerk, map[string]any{"memo": "b"}, "If-Match", etag)
	requireProblem(t, r, http.StatusPreconditionFailed, "VERSION_MISMATCH")
	r = b.h.Do(t, http.MethodDelete, path, b.admin, nil, "If-Match", etag)
	requireProblem(t, r, http.StatusPreconditionFailed, "VERSION_MISMATCH")
	r = b.h.Do(t, http.MethodPatch, "/v1/customers/"+b.customer.ID.String(), b.clerk, map[string]any{"name": "X"}, "If-Match", `"9"`)
	requireProblem(t, r, http.StatusPreconditionFailed, "VERSION_MISMATCH")

	got, err := invoices.InvoiceGetByID(b.ctx, b.h.Pool, d.ID)
	require.NoError(t, err)
	require.Equal(t, "a", got.Memo)
	require.Equal(t, int64(2), got.Version)
}

// withLine is line l with member k set to v.
func withLine(l map[string]any, k string, v any) map[string]any {
	l[k] = v
	return l
}
