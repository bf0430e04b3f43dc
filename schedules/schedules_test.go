package schedules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/schedules"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

var one = func() quantity.Quantity {
	q, err := quantity.Whole(1)
	if err != nil {
		panic(err)
	}
	return q
}()

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// clock is a fake clock the test walks.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

var berlin = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return loc
}()

type bundle struct {
	ctx      context.Context
	pool     *pgxpool.Pool
	clock    *clock
	clerk    identity.Principal
	customer *invoices.Customer
	emit     *outbox.Emitter
}

func setup(t *testing.T) bundle {
	t.Helper()
	ctx := context.Background()
	pool := storetest.Pool(t)
	u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: "clerk1", DisplayName: "clerk1", Role: identity.RoleClerk})
	require.NoError(t, err)
	return bundle{ctx: ctx, pool: pool, clock: &clock{}, clerk: identity.Principal{UserID: u.ID, Username: u.Username, Role: u.Role},
		customer: invoicetest.Customer(ctx, t, pool, invoicetest.CustomerOpts{Currency: "EUR"}), emit: outboxtest.Emitter(t)}
}

func (b bundle) service() *schedules.Service {
	return schedules.NewService(b.pool, b.emit, schedules.Config{BusinessTimeZone: berlin, Now: b.clock.Now})
}

// monthly creates a schedule on day dom of each month from start.
func (b bundle) monthly(t *testing.T, start string, dom int) *schedules.Schedule {
	t.Helper()
	b.clock.Set(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s, err := b.service().Create(b.ctx, b.clerk, "rest", schedules.CreateInput{
		CustomerID: b.customer.ID, Every: "1 month", DayOfMonth: &dom, Start: start, Issue: schedules.IssueNever,
		Lines: []invoices.LineInput{{Description: "Hosting {period}", Quantity: one, UnitAmount: 10000, TaxRateBPS: 1900}},
	})
	require.NoError(t, err)
	return s
}

// periods returns the service periods of the customer's invoices, oldest first.
func (b bundle) periods(t *testing.T) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT to_char(period_start, 'YYYY-MM-DD') || '/' || to_char(period_end, 'YYYY-MM-DD')
		FROM invoices WHERE customer_id = $1 ORDER BY period_start`, b.customer.ID)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var p string
		require.NoError(t, rows.Scan(&p))
		out = append(out, p)
	}
	require.NoError(t, rows.Err())
	return out
}

func (b bundle) runAt(t *testing.T, at time.Time) []*schedules.Run {
	t.Helper()
	b.clock.Set(at)
	runs, err := b.service().Run(b.ctx)
	require.NoError(t, err)
	return runs
}

func TestRunMonthlyOn31stClampsToMonthEndAcrossDST(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.monthly(t, "2027-01-31", 31)

	require.Empty(t, b.runAt(t, time.Date(2027, 1, 30, 22, 59, 0, 0, time.UTC)), "23:59 on the 30th in Berlin")
	runs := b.runAt(t, time.Date(2027, 1, 30, 23, 0, 0, 0, time.UTC)) // 00:00 on the 31st in Berlin
	require.Len(t, runs, 1)
	inv, err := invoices.InvoiceGetByID(b.ctx, b.pool, *runs[0].InvoiceID)
	require.NoError(t, err)
	require.Equal(t, invoices.StatusDraft, inv.Status)
	require.Equal(t, "Hosting 2027-01-31 – 2027-02-27", inv.Lines[0].Description)
	require.Equal(t, int64(11900), inv.Total)

	require.Empty(t, b.runAt(t, time.Date(2027, 2, 15, 12, 0, 0, 0, time.UTC)))
	require.Len(t, b.runAt(t, time.Date(2027, 2, 28, 8, 0, 0, 0, time.UTC)), 1)
	// Berlin moves to summer time on 28 March 2027: the 31st begins at
	// 22:00 UTC on the 30th, not 23:00.
	require.Empty(t, b.runAt(t, time.Date(2027, 3, 30, 21, 59, 0, 0, time.UTC)))
	require.Len(t, b.runAt(t, time.Date(2027, 3, 30, 22, 0, 0, 0, time.UTC)), 1)
	require.Empty(t, b.runAt(t, time.Date(2027, 3, 31, 12, 0, 0, 0, time.UTC)), "each period once")
	require.Len(t, b.runAt(t, time.Date(2027, 4, 30, 12, 0, 0, 0, time.UTC)), 1)

	require.Equal(t, []string{"2027-01-31/2027-02-27", "2027-02-28/2027-03-30", "2027-03-31/2027-04-29", "2027-04-30/2027-05-30"}, b.periods(t))
}

func TestRunLeapYearFebruaryEndsOn29th(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.monthly(t, "2028-01-31", 31)
	// Downtime across two boundaries: each missed period once.
	require.Len(t, b.runAt(t, time.Date(2028, 3, 31, 12, 0, 0, 0, time.UTC)), 3)
	require.Empty(t, b.runAt(t, time.Date(2028, 3, 31, 13, 0, 0, 0, time.UTC)))
	require.Equal(t, []string{"2028-01-31/2028-02-28", "2028-02-29/2028-03-30", "2028-03-31/2028-04-29"}, b.periods(t))
}

func TestRunConcurrentReplicasDoubleNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.monthly(t, "2027-01-31", 31)
	b.clock.Set(time.Date(2027, 6, 15, 12, 0, 0, 0, time.UTC))
	var wg sync.WaitGroup
	made := make(chan int, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs, err := b.service().Run(b.ctx)
			if err != nil {
				t.Error(err)
			}
			made <- len(runs)
		}()
	}
	wg.Wait()
	close(made)
	total := 0
	for n := range made {
		total += n
	}
	require.Equal(t, 5, total, "each period drafted by one replica")
	require.Equal(t, []string{"2027-01-31/2027-02-27", "2027-02-28/2027-03-30", "2027-03-31/2027-04-29",
		"2027-04-30/2027-05-30", "2027-05-31/2027-06-29"}, b.periods(t))
}

func TestRunRestartMidRunDoublesAndSkipsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.monthly(t, "2027-01-31", 31)
	require.Len(t, b.runAt(t, time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)), 2)

	// A replica claims March's period and dies before committing; a
	// second service on the same database waits on its claim, then
	// drafts March once it is gone, and the rest.
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	claimed, err := schedules.RunClaimTx(b.ctx, tx, &schedules.Run{ID: uuid.Must(uuid.NewV7()), ScheduleID: s.ID,
		PeriodStart: invoices.Date{Time: time.Date(2027, 3, 31, 0, 0, 0, 0, time.UTC)}, PeriodEnd: invoices.Date{Time: time.Date(2027, 4, 29, 0, 0, 0, 0, time.UTC)},
		Status: schedules.RunDrafted, Issue: schedules.IssueNever, CreatedAt: time.Now()})
	require.NoError(t, err)
	require.True(t, claimed)
	b.clock.Set(time.Date(2027, 5, 1, 12, 0, 0, 0, time.UTC))
	done := make(chan []*schedules.Run)
	go func() {
		runs, err := b.service().Run(b.ctx)
		if err != nil {
			t.Error(err)
		}
		done <- runs
	}()
	time.Sleep(50 * time.Millisecond) // let it reach the claim; correctness does not depend on it
	require.NoError(t, tx.Rollback(b.ctx))
	require.Len(t, <-done, 2)
	require.Empty(t, b.runAt(t, time.Date(2027, 5, 1, 13, 0, 0, 0, time.UTC)))
	require.Equal(t, []string{"2027-01-31/2027-02-27", "2027-02-28/2027-03-30", "2027-03-31/2027-04-29", "2027-04-30/2027-05-30"}, b.periods(t))
}

func TestCreateScheduleBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	_, clerk := h.User(t, "clerk1", identity.RoleClerk)
	ctx := context.Background()
	c := invoicetest.Customer(ctx, t, h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})
	good := func(over map[string]any) map[string]any {
		body := map[string]any{"customer_id": c.ID.String(), "every": "1 month", "day_of_month": 31, "start": "2099-01-31",
			"issue": "never", "lines": []map[string]any{{"description": "Hosting {period}", "quantity": "1", "unit_amount": 10000}}}
		for k, v := range over {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		return body
	}
	for _, tc := range []struct {
		name, field string
		over        map[string]any
	}{
		{"end before start", "end", map[string]any{"end": "2099-01-30"}},
		{"day of month 0", "day_of_month", map[string]any{"day_of_month": 0}},
		{"day of month 32", "day_of_month", map[string]any{"day_of_month": 32}},
		{"unknown customer", "customer_id", map[string]any{"customer_id": uuid.NewString()}},
		{"unknown allowance", "allowance_id", map[string]any{"issue": "under_allowance", "allowance_id": uuid.NewString()}},
		{"bad cadence", "every", map[string]any{"every": "1 fortnight"}},
		{"zero cadence", "every", map[string]any{"every": "0 months"}},
		{"bad line unit", "lines.0.unit", map[string]any{"lines": []map[string]any{{"description": "x", "quantity": "1", "unit_amount": 1, "unit": "BOGUS"}}}},
		{"no lines", "lines", map[string]any{"lines": []any{}}},
		{"bad issue", "issue", map[string]any{"issue": "always"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Do(t, http.MethodPost, "/v1/schedules", clerk, good(tc.over))
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s", r.Body)
			fields := []string{}
			for _, e := range r.Problem(t)["errors"].([]any) {
				fields = append(fields, e.(map[string]any)["field"].(string))
			}
			require.Contains(t, fields, tc.field)
		})
	}
	var n int
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT count(*) FROM schedules`).Scan(&n))
	require.Zero(t, n)

	r := h.Do(t, http.MethodPost, "/v1/schedules", clerk, good(nil))
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var s map[string]any
	r.JSON(t, &s)
	require.Equal(t, "1 month", s["every"])
	loc := r.Header.Get("Location")
	require.Equal(t, "/v1/schedules/"+s["id"].(string), loc)
	require.Equal(t, http.StatusOK, h.Do(t, http.MethodGet, loc, clerk, nil).StatusCode)
	require.Equal(t, http.StatusOK, h.Do(t, http.MethodGet, loc+"/runs", clerk, nil).StatusCode)
	require.Equal(t, http.StatusOK, h.Do(t, http.MethodGet, "/v1/schedules", clerk, nil).StatusCode)
	require.Equal(t, http.StatusOK, h.Do(t, http.MethodDelete, loc, clerk, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, h.Do(t, http.MethodDelete, loc, clerk, nil).StatusCode)
}

// Each period's run is announced as schedule.run in its own transaction:
// drafted for a person, or failed with the reason when the invoice rules
// refuse the template.
func TestRunAnnouncesEachPeriodDraftedOrFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.monthly(t, "2027-01-31", 31)
	require.Len(t, b.runAt(t, time.Date(2027, 2, 28, 12, 0, 0, 0, time.UTC)), 2)
	// The template's unit withdrawn under it: March's draft is refused.
	_, err := b.pool.Exec(b.ctx, `UPDATE schedules SET lines = jsonb_set(lines, '{0,unit}', '"BOGUS"') WHERE id = $1`, s.ID)
	require.NoError(t, err)
	runs := b.runAt(t, time.Date(2027, 3, 31, 12, 0, 0, 0, time.UTC))
	require.Len(t, runs, 1)
	require.Equal(t, schedules.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "lines.0.unit")

	var got []string
	for _, ev := range outboxtest.Events(t, b.pool) {
		require.Equal(t, "schedule.run", string(ev.Type))
		var r schedules.Run
		require.NoError(t, json.Unmarshal(ev.Data, &r))
		require.Equal(t, s.ID, r.ScheduleID)
		got = append(got, r.PeriodStart.String()+" "+string(r.Status))
	}
	require.Equal(t, []string{"2027-01-31 drafted", "2027-02-28 drafted", "2027-03-31 failed"}, got)
}

// A change applies from the next period drafted: January's draft keeps
// the old lines, February's has the new ones; an end before the next
// period ends the schedule.
func TestUpdateAppliesToThePeriodsDraftedAfterIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.monthly(t, "2027-01-31", 31)
	require.Len(t, b.runAt(t, time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC)), 1)

	lines := []invoices.LineInput{{Description: "Hosting and support {period}", Quantity: one, UnitAmount: 15000, TaxRateBPS: 1900}}
	end := json.RawMessage(`"2027-03-30"`)
	up, err := b.service().Update(b.ctx, b.clerk, "rest", etag.MatchVersion(s.Version), schedules.UpdateInput{ScheduleID: s.ID, Lines: lines, End: end})
	require.NoError(t, err)
	require.Equal(t, s.Version+1, up.Version)
	require.Equal(t, "2027-03-30", up.End.String())
	require.Len(t, b.runAt(t, time.Date(2027, 3, 31, 12, 0, 0, 0, time.UTC)), 1, "February only: March begins after the end")

	rows, err := b.pool.Query(b.ctx, `SELECT id FROM invoices WHERE customer_id = $1 ORDER BY period_start`, b.customer.ID)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	var got []string
	for _, id := range ids {
		inv, err := invoices.InvoiceGetByID(b.ctx, b.pool, id)
		require.NoError(t, err)
		got = append(got, fmt.Sprintf("%s %d", inv.Lines[0].Description, inv.Total))
	}
	require.Equal(t, []string{"Hosting 2027-01-31 – 2027-02-27 11900", "Hosting and support 2027-02-28 – 2027-03-30 17850"}, got)

	// A stale version changes nothing.
	_, err = b.service().Update(b.ctx, b.clerk, "rest", etag.MatchVersion(s.Version), schedules.UpdateInput{ScheduleID: s.ID, End: json.RawMessage(`null`)})
	require.True(t, problem.HasCode(err, etag.CodeVersionMismatch), "%v", err)
	now, err := b.service().Get(b.ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, up.Version, now.Version)
	require.NotNil(t, now.End)
}

// PATCH over HTTP: one of many concurrent changes based on one version
// wins, the others are 412; every bad change is refused naming its field
// with nothing written; a deleted schedule is 404.
func TestPatchScheduleConcurrentlyAndBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	_, clerk := h.User(t, "clerk1", identity.RoleClerk)
	_, approver := h.User(t, "approver1", identity.RoleApprover)
	ctx := context.Background()
	c := invoicetest.Customer(ctx, t, h.Pool, invoicetest.CustomerOpts{Currency: "EUR"})
	r := h.Do(t, http.MethodPost, "/v1/schedules", clerk, map[string]any{"customer_id": c.ID.String(), "every": "1 month", "start": "2099-01-31",
		"issue": "never", "lines": []map[string]any{{"description": "Hosting {period}", "quantity": "1", "unit_amount": 10000}}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	loc := r.Header.Get("Location")
	require.Equal(t, `"1"`, r.Header.Get("ETag"))

	const n = 16
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.Do(t, http.MethodPatch, loc, clerk, map[string]any{"count": i + 1}, "If-Match", `"1"`)
			codes <- r.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for code := range codes {
		got[code]++
	}
	require.Equal(t, map[int]int{http.StatusOK: 1, http.StatusPreconditionFailed: n - 1}, got)

	snapshot := func() string {
		t.Helper()
		var row string
		require.NoError(t, h.Pool.QueryRow(ctx, `SELECT row_to_json(s)::text FROM schedules s WHERE s.id::text = $1`, loc[len("/v1/schedules/"):]).Scan(&row))
		return row
	}
	before := snapshot()
	var audits int
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE type = 'schedule.updated'`).Scan(&audits))
	require.Equal(t, 1, audits)
	for _, tc := range []struct {
		name, field string
		body        map[string]any
		token       string
		status      int
	}{
		{"end before start", "end", map[string]any{"end": "2099-01-30"}, clerk, 422},
		{"count 0", "count", map[string]any{"count": 0}, clerk, 422},
		{"terms over a year", "payment_terms_days", map[string]any{"payment_terms_days": 400}, clerk, 422},
		{"issue without an allowance", "allowance_id", map[string]any{"issue": "under_allowance"}, clerk, 422},
		{"unknown allowance", "allowance_id", map[string]any{"issue": "under_allowance", "allowance_id": uuid.NewString()}, clerk, 422},
		{"an allowance with issue never", "allowance_id", map[string]any{"allowance_id": uuid.NewString()}, clerk, 422},
		{"the cadence", "every", map[string]any{"every": "1 week"}, clerk, 422},
		{"the start", "start", map[string]any{"start": "2099-02-01"}, clerk, 422},
		{"a bad line", "lines.0.unit", map[string]any{"lines": []map[string]any{{"description": "x", "quantity": "1", "unit_amount": 1, "unit": "BOGUS"}}}, clerk, 422},
		{"the id in the body", "schedule_id", map[string]any{"schedule_id": uuid.NewString()}, clerk, 422},
		{"an approver", "", map[string]any{"count": 3}, approver, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Do(t, http.MethodPatch, loc, tc.token, tc.body)
			require.Equal(t, tc.status, r.StatusCode, "%s", r.Body)
			if tc.field == "" {
				return
			}
			fields := []string{}
			for _, e := range r.Problem(t)["errors"].([]any) {
				fields = append(fields, e.(map[string]any)["field"].(string))
			}
			require.Contains(t, fields, tc.field, "%s", r.Body)
		})
	}
	require.Equal(t, before, snapshot(), "nothing written")

	r = h.Do(t, http.MethodPatch, loc, clerk, map[string]any{"count": nil, "payment_terms_days": 30})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, `"3"`, r.Header.Get("ETag"))
	var sc map[string]any
	r.JSON(t, &sc)
	require.Nil(t, sc["count"])
	require.EqualValues(t, 30, sc["payment_terms_days"])

	require.Equal(t, http.StatusOK, h.Do(t, http.MethodDelete, loc, clerk, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, h.Do(t, http.MethodPatch, loc, clerk, map[string]any{"count": 2}).StatusCode)
}

// A schedule whose runs are not its first periods (a gap, as a claim
// committed out of order would leave) has the gap drafted: a pass reads
// how far each schedule has run in one query, and the runs themselves
// when that does not add up.
func TestRunFillsAGapInASchedulesRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.monthly(t, "2027-01-31", 31)
	require.Len(t, b.runAt(t, time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC)), 1)
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	claimed, err := schedules.RunClaimTx(b.ctx, tx, &schedules.Run{ID: uuid.Must(uuid.NewV7()), ScheduleID: s.ID,
		PeriodStart: invoices.Date{Time: time.Date(2027, 3, 31, 0, 0, 0, 0, time.UTC)}, PeriodEnd: invoices.Date{Time: time.Date(2027, 4, 29, 0, 0, 0, 0, time.UTC)},
		Status: schedules.RunFailed, Error: "claimed out of order", Issue: schedules.IssueNever, CreatedAt: time.Now()})
	require.NoError(t, err)
	require.True(t, claimed)
	require.NoError(t, tx.Commit(b.ctx))

	runs := b.runAt(t, time.Date(2027, 4, 30, 12, 0, 0, 0, time.UTC))
	var got []string
	for _, r := range runs {
		got = append(got, r.PeriodStart.String())
	}
	require.Equal(t, []string{"2027-02-28", "2027-04-30"}, got, "February's gap, then April")
	require.Empty(t, b.runAt(t, time.Date(2027, 4, 30, 13, 0, 0, 0, time.UTC)))
}
