package schedules_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/schedules"
	"github.com/stretchr/testify/require"
)

// A monthly billing run for five customers under a standing allowance of
// three issues: the job drafts five invoices, issues three under the
// allowance with consecutive numbers, and leaves two waiting for the
// approvals the gate asked for; the allowance is spent. Once it is
// revoked, the next month's five drafts all wait.
func TestScheduleIssuesUnderAnAllowanceUntilItIsSpentOrRevoked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{}
	clk.Set(time.Now().UTC())
	h := apptest.New(t, apptest.Options{Config: app.Config{Invoices: invoices.Config{Now: clk.Now}}})
	clerk, clerkTok := h.User(t, "clerk1", identity.RoleClerk)
	_, approverTok := h.User(t, "approver1", identity.RoleApprover)

	body := map[string]any{"capability": "issue", "customer_ids": nil, "currency": "EUR", "max_total": 900_000, "max_count": 3,
		"valid_until": clk.Now().Add(60 * 24 * time.Hour).Format(time.RFC3339), "reason": "the monthly run"}
	r := h.Do(t, http.MethodPost, "/v1/allowances", clerkTok, body)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	require.Contains(t, string(r.Body), "approval_id")
	r = h.Do(t, http.MethodPost, "/v1/approvals/"+r.Problem(t)["approval_id"].(string)+"/approve", approverTok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = h.Do(t, http.MethodPost, "/v1/allowances", clerkTok, body)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var allowance map[string]any
	r.JSON(t, &allowance)
	allowanceID := uuid.MustParse(allowance["id"].(string))

	svc := h.App.Schedules()
	start := clk.Now().Format(time.DateOnly)
	var ids []uuid.UUID
	for i := range 5 {
		c := invoicetest.Customer(ctx, t, h.Pool, invoicetest.CustomerOpts{Name: fmt.Sprintf("Customer %d", i), Currency: "EUR"})
		sc, err := svc.Create(ctx, clerk.Principal(), capability.PathREST, schedules.CreateInput{CustomerID: c.ID, Every: "1 month", Start: start,
			Issue: schedules.IssueUnderAllowance, AllowanceID: &allowanceID,
			Lines: []invoices.LineInput{{Description: "Hosting {period}", Quantity: one, UnitAmount: 10000, TaxRateBPS: 1900}}})
		require.NoError(t, err)
		ids = append(ids, sc.ID)
	}
	statuses := func() map[schedules.RunStatus]int {
		t.Helper()
		out := map[schedules.RunStatus]int{}
		for _, id := range ids {
			runs, err := svc.Runs(ctx, id, page.Request{Limit: page.MaxLimit})
			require.NoError(t, err)
			for _, run := range runs.Data {
				out[run.Status]++
				switch run.Status {
				case schedules.RunIssued:
					require.Equal(t, allowanceID, *run.AllowanceID)
				case schedules.RunWaiting:
					require.NotNil(t, run.ApprovalID, "the approval it waits for")
				}
			}
		}
		return out
	}

	_, err := svc.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, map[schedules.RunStatus]int{schedules.RunIssued: 3, schedules.RunWaiting: 2}, statuses())
	r = h.Do(t, http.MethodGet, "/v1/allowances/"+allowanceID.String(), clerkTok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &allowance)
	require.EqualValues(t, 0, allowance["remaining_count"], "%v", allowance)
	// The issued numbers are consecutive: one series, no gap.
	rows, err := h.Pool.Query(ctx, `SELECT number FROM invoices WHERE number IS NOT NULL`)
	require.NoError(t, err)
	var seqs []int
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		seq, err := strconv.Atoi(n[strings.LastIndex(n, "-")+1:])
		require.NoError(t, err)
		seqs = append(seqs, seq)
	}
	require.NoError(t, rows.Err())
	slices.Sort(seqs)
	require.Equal(t, []int{1, 2, 3}, seqs)

	r = h.Do(t, http.MethodPost, "/v1/allowances/"+allowanceID.String()+"/revoke", approverTok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	clk.Set(clk.Now().AddDate(0, 1, 1))
	_, err = svc.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, map[schedules.RunStatus]int{schedules.RunIssued: 3, schedules.RunWaiting: 7}, statuses(), "the second month issues nothing")
}
