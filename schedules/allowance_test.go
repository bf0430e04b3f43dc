package schedules_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	"github.com/jackc/pgx/v5"
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
	_, adminTok := h.User(t, "admin1", identity.RoleAdmin)
	r := h.Do(t, http.MethodPost, "/v1/webhook-endpoints", adminTok, map[string]any{"url": "https://1.1.1.1/hooks", "events": []string{"schedule.run"}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)

	allowanceID := grantAllowance(t, h, clk, clerkTok, approverTok, 3, 60)
	var allowance map[string]any

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
					if run.AllowanceID == nil {
						require.NotNil(t, run.ApprovalID, "issued on the approval it waited for")
					} else {
						require.Equal(t, allowanceID, *run.AllowanceID)
					}
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
	// The issued numbers are consecutive: each year's series from 1, no
	// gap (the clock crosses a year when the test runs in December).
	numbers := func() int {
		t.Helper()
		rows, err := h.Pool.Query(ctx, `SELECT number FROM invoices WHERE number IS NOT NULL`)
		require.NoError(t, err)
		series := map[string][]int{}
		total := 0
		for rows.Next() {
			var n string
			require.NoError(t, rows.Scan(&n))
			i := strings.LastIndex(n, "-")
			seq, err := strconv.Atoi(n[i+1:])
			require.NoError(t, err)
			series[n[:i]] = append(series[n[:i]], seq)
			total++
		}
		require.NoError(t, rows.Err())
		for prefix, seqs := range series {
			slices.Sort(seqs)
			for j, seq := range seqs {
				require.Equal(t, j+1, seq, "series %s: %v", prefix, seqs)
			}
		}
		return total
	}
	require.Equal(t, 3, numbers())
	// Each period's outcome is announced once, as its run reads.
	announced := func() map[string]int {
		t.Helper()
		rows, err := h.Pool.Query(ctx, `SELECT payload::jsonb->'data'->>'status' FROM webhook_deliveries WHERE event_type = 'schedule.run'`)
		require.NoError(t, err)
		out := map[string]int{}
		for rows.Next() {
			var st string
			require.NoError(t, rows.Scan(&st))
			out[st]++
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Equal(t, map[string]int{"issued": 3, "waiting": 2}, announced())

	r = h.Do(t, http.MethodPost, "/v1/allowances/"+allowanceID.String()+"/revoke", approverTok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	clk.Set(clk.Now().AddDate(0, 1, 1))
	_, err = svc.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, map[schedules.RunStatus]int{schedules.RunIssued: 3, schedules.RunWaiting: 7}, statuses(), "the second month issues nothing")
	require.Equal(t, map[string]int{"issued": 3, "waiting": 7}, announced())

	// An approver approves one waiting draft: the next pass issues it,
	// consuming that approval, and the rest still wait.
	var approvalID string
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT approval_id FROM schedule_runs WHERE status = 'waiting' ORDER BY period_start, id LIMIT 1`).Scan(&approvalID))
	r = h.Do(t, http.MethodPost, "/v1/approvals/"+approvalID+"/approve", approverTok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	_, err = svc.Run(ctx)
	require.NoError(t, err)
	runs := statuses()
	require.Equal(t, map[schedules.RunStatus]int{schedules.RunIssued: 4, schedules.RunWaiting: 6}, runs)
	require.Equal(t, 4, numbers())
	require.Equal(t, map[string]int{"issued": 4, "waiting": 7}, announced())
	var consumed string
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT status FROM approval_requests WHERE id = $1`, approvalID).Scan(&consumed))
	require.Equal(t, "consumed", consumed)

	// A service that died between an issue's commit and the run's record:
	// the next pass finds the draft issued and records it, issuing nothing.
	_, err = h.Pool.Exec(ctx, `UPDATE schedule_runs SET status = 'drafted', allowance_id = NULL
		WHERE id = (SELECT id FROM schedule_runs WHERE status = 'issued' AND allowance_id IS NOT NULL ORDER BY id LIMIT 1)`)
	require.NoError(t, err)
	_, err = svc.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, map[schedules.RunStatus]int{schedules.RunIssued: 4, schedules.RunWaiting: 6}, statuses(), "recorded issued, with the allowance it drew")
	require.Equal(t, 4, numbers())
	require.Equal(t, map[string]int{"issued": 5, "waiting": 7}, announced(), "announced when recorded")
}

// grantAllowance has the clerk ask for an allowance to issue count
// invoices in EUR for the next days, and the approver approve it.
func grantAllowance(t *testing.T, h *apptest.Harness, clk *clock, clerkTok, approverTok string, count int, days int) uuid.UUID {
	t.Helper()
	body := map[string]any{"capability": "issue", "customer_ids": nil, "currency": "EUR", "max_total": 900_000, "max_count": count,
		"valid_until": clk.Now().AddDate(0, 0, days).Format(time.RFC3339), "reason": "the monthly run"}
	r := h.Do(t, http.MethodPost, "/v1/allowances", clerkTok, body)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	require.Contains(t, string(r.Body), "approval_id")
	r = h.Do(t, http.MethodPost, "/v1/approvals/"+r.Problem(t)["approval_id"].(string)+"/approve", approverTok, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = h.Do(t, http.MethodPost, "/v1/allowances", clerkTok, body)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var allowance map[string]any
	r.JSON(t, &allowance)
	return uuid.MustParse(allowance["id"].(string))
}

// A schedule switched to under_allowance issues the periods it drafts
// from then on, never a draft it left for a person before.
func TestSwitchingToUnderAllowanceIssuesOnlyLaterPeriods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{}
	clk.Set(time.Now().UTC())
	h := apptest.New(t, apptest.Options{Config: app.Config{Invoices: invoices.Config{Now: clk.Now}}})
	clerk, clerkTok := h.User(t, "clerk1", identity.RoleClerk)
	_, approverTok := h.User(t, "approver1", identity.RoleApprover)
	allowanceID := grantAllowance(t, h, clk, clerkTok, approverTok, 5, 60)
	svc := h.App.Schedules()
	c := invoicetest.Customer(ctx, t, h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})
	sc, err := svc.Create(ctx, clerk.Principal(), capability.PathREST, schedules.CreateInput{CustomerID: c.ID, Every: "1 month",
		Start: clk.Now().Format(time.DateOnly), Issue: schedules.IssueNever,
		Lines: []invoices.LineInput{{Description: "Hosting {period}", Quantity: one, UnitAmount: 10000, TaxRateBPS: 1900}}})
	require.NoError(t, err)
	// The service's own job runs on start too: which of it and this Run
	// drafts a period is not the test's business, so it reads the runs.
	_, err = svc.Run(ctx)
	require.NoError(t, err)
	first, err := svc.Runs(ctx, sc.ID, page.Request{Limit: 10})
	require.NoError(t, err)
	require.Len(t, first.Data, 1)

	r := h.Do(t, http.MethodPatch, "/v1/schedules/"+sc.ID.String(), clerkTok, map[string]any{"issue": "under_allowance", "allowance_id": allowanceID})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	_, err = svc.Run(ctx)
	require.NoError(t, err)
	inv, err := invoices.InvoiceGetByID(ctx, h.Pool, *first.Data[0].InvoiceID)
	require.NoError(t, err)
	require.Equal(t, invoices.StatusDraft, inv.Status, "left for a person, as it was drafted")

	clk.Set(clk.Now().AddDate(0, 1, 1))
	_, err = svc.Run(ctx)
	require.NoError(t, err)
	runs, err := svc.Runs(ctx, sc.ID, page.Request{Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs.Data, 2)
	require.Equal(t, schedules.RunIssued, runs.Data[0].Status, "the period drafted after the switch")
	require.Equal(t, allowanceID, *runs.Data[0].AllowanceID)
	require.Equal(t, schedules.RunDrafted, runs.Data[1].Status)
}

// A fake clock walks a monthly schedule on the 31st that issues under an
// allowance from January to April 2027, across February's end and the
// switch to summer time, with two replicas running the job at each step:
// one invoice per period, issued with gapless numbers, the allowance
// drawn once per period.
func TestBillingWalkIssuesOncePerPeriodAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{}
	clk.Set(time.Date(2027, 1, 30, 12, 0, 0, 0, time.UTC))
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	h := apptest.New(t, apptest.Options{Config: app.Config{Invoices: invoices.Config{Now: clk.Now, BusinessTimeZone: berlin}}})
	clerk, clerkTok := h.User(t, "clerk1", identity.RoleClerk)
	_, approverTok := h.User(t, "approver1", identity.RoleApprover)
	allowanceID := grantAllowance(t, h, clk, clerkTok, approverTok, 10, 120)
	svc := h.App.Schedules()
	c := invoicetest.Customer(ctx, t, h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})
	dom := 31
	sc, err := svc.Create(ctx, clerk.Principal(), capability.PathREST, schedules.CreateInput{CustomerID: c.ID, Every: "1 month", DayOfMonth: &dom,
		Start: "2027-01-31", Issue: schedules.IssueUnderAllowance, AllowanceID: &allowanceID,
		Lines: []invoices.LineInput{{Description: "Hosting {period}", Quantity: one, UnitAmount: 10000, TaxRateBPS: 1900}}})
	require.NoError(t, err)

	for _, at := range []time.Time{
		time.Date(2027, 1, 30, 22, 59, 0, 0, time.UTC), // 23:59 on the 30th in Berlin: nothing yet
		time.Date(2027, 1, 30, 23, 0, 0, 0, time.UTC),  // the 31st begins
		time.Date(2027, 2, 28, 8, 0, 0, 0, time.UTC),   // the 31st clamped to the 28th
		time.Date(2027, 3, 30, 22, 0, 0, 0, time.UTC),  // the 31st begins at 22:00 UTC in summer time
		time.Date(2027, 3, 31, 9, 0, 0, 0, time.UTC),   // again the same day: nothing
		time.Date(2027, 4, 30, 9, 0, 0, 0, time.UTC),
	} {
		clk.Set(at)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := svc.Run(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}

	rows, err := h.Pool.Query(ctx, `SELECT to_char(period_start, 'YYYY-MM-DD'), number FROM invoices WHERE customer_id = $1 ORDER BY period_start`, c.ID)
	require.NoError(t, err)
	type issued struct{ Period, Number string }
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[issued])
	require.NoError(t, err)
	require.Equal(t, []issued{{"2027-01-31", "INV-2027-000001"}, {"2027-02-28", "INV-2027-000002"}, {"2027-03-31", "INV-2027-000003"},
		{"2027-04-30", "INV-2027-000004"}}, got)
	runs, err := svc.Runs(ctx, sc.ID, page.Request{Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs.Data, 4)
	for _, r := range runs.Data {
		require.Equal(t, schedules.RunIssued, r.Status, "%+v", r)
		require.Equal(t, allowanceID, *r.AllowanceID)
	}
	var left int
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT remaining_count FROM allowances WHERE id = $1`, allowanceID).Scan(&left))
	require.Equal(t, 6, left)
}
