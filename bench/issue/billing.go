package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/schedules"
	"github.com/jackc/pgx/v5"
)

// billingCustomers is how many customers the schedules are spread over:
// 10 each at the default 10,000, a business billing monthly retainers.
const billingCustomers = 1000

// scheduleSweepEvery is app's scheduleRunInterval: the service's own
// River sweep calls the same Run every 5 minutes, and a timed Run must
// not share its schedules with it.
const scheduleSweepEvery = 5 * time.Minute

// billingLine is bench-issue's draft line: 2 × 50.00 EUR at 20 %, 120.00
// EUR an invoice, so an allowance for 10,000 of them (1,200,000.00 EUR)
// reaches the default tier its grant needs two approvers for.
var billingLine = invoices.LineInput{Description: "Consulting {period}", Quantity: 2 * quantity.One, UnitAmount: 5000, TaxRateBPS: 2000}

// billingRun is `make bench-billing-run` (issue 43): the monthly billing
// run, timed as the service makes it, one Schedules().Run call (one River
// sweep at a time). Set up once, untimed: N schedules that issue never,
// starting on the 1st of a month to come, and N that issue
// under_allowance, starting on the 15th, spread over 1,000 customers, and
// their first month run. Each round then moves the service's clock to the
// next month's 1st and times one Run (N drafts), to its 15th and times
// one Run (N drafts, each issued through issue-invoice as the schedule's
// creator, drawing one allowance granted for exactly N), times one Run
// with nothing due, and runs bench-issue's HTTP issues at 8 as the
// reference.
func (b *bench) billingRun(ctx context.Context) error {
	n := b.o.schedules
	second, err := identity.UserCreate(ctx, b.pool, identity.UserCreateParams{Username: "bench-approver-2", Role: identity.RoleApprover})
	if err != nil {
		return err
	}
	_, _, _, total, err := invoices.ComputeLines([]invoices.LineInput{billingLine})
	if err != nil {
		return err
	}
	grant := func(month int) (uuid.UUID, error) {
		return b.grantAllowance(ctx, n, int64(n)*total, fmt.Sprintf("billing run, month %d", month), second.Principal())
	}
	allowance, err := grant(0)
	if err != nil {
		return err
	}
	y, m, _ := time.Now().UTC().Date()
	first := time.Date(y, m+2, 1, 0, 0, 0, 0, time.UTC)
	setup := time.Now()
	if err := b.createSchedules(ctx, n, first, allowance); err != nil {
		return err
	}
	// Month 0, untimed, gives the tables the history a running service's
	// have: a first Run on an empty schedule_runs plans its per-schedule
	// reads as scans of an empty table and keeps the plans while it
	// fills: such a first round drafted at 40 % of the next two's rate.
	if _, _, err := b.timedRun(ctx, first, n, time.Duration(n)*10*time.Millisecond, "", ""); err != nil {
		return fmt.Errorf("month 0, drafts: %w", err)
	}
	if _, _, err := b.timedRun(ctx, first.AddDate(0, 0, 14), n, time.Duration(n)*20*time.Millisecond, "", ""); err != nil {
		return fmt.Errorf("month 0, issues: %w", err)
	}
	if err := b.checkIssued(ctx, n, first.AddDate(0, 0, 14), allowance, total); err != nil {
		return fmt.Errorf("month 0: %w", err)
	}
	fmt.Printf("bench-billing-run: %d schedules fall due per timed Run, over %d customers; %d live (half issue never, due on the 1st; half under_allowance, due on the 15th; set up with their first month run in %s); %d rounds (median shown)\n",
		n, billingCustomers, 2*n, time.Since(setup).Round(time.Second), b.o.rounds)
	fmt.Printf("drafts: one Run drafting the never half; issues: one Run drafting the under_allowance half and issuing each draft, drawing one allowance granted for exactly %d; idle: one Run with nothing due\n", n)
	ref := b.o.n - b.o.n%8
	fmt.Printf("reference: bench-issue's approved issues over HTTP at concurrency 8, %d a round, in the same round\n", ref)
	fmt.Printf("CPU/op is this process's (the service, its River jobs, the bench), not PostgreSQL's\n\n")

	var drafts, issues, idle, refs, cpuDrafts, cpuIssues, cpuIdle, cpuRefs []float64
	var detail [4][]string
	var last [4]time.Duration
	for r := range b.o.rounds {
		month := r + 1
		day := first.AddDate(0, month, 0)
		if allowance, err = grant(month); err != nil {
			return err
		}
		profile := ""
		if r == 0 {
			profile = b.o.profile
		}
		// The guesses bound the first round; later rounds expect what the
		// last one took.
		elapsed, cpu, err := b.timedRun(ctx, day, n, cmp.Or(last[0], time.Duration(n)*10*time.Millisecond), profile, "drafts")
		if err != nil {
			return fmt.Errorf("round %d, drafts: %w", r+1, err)
		}
		last[0] = elapsed
		drafts, cpuDrafts = append(drafts, float64(n)/elapsed.Seconds()), append(cpuDrafts, float64(cpu)/float64(n))
		detail[0] = append(detail[0], fmt.Sprintf("%.0f", drafts[r]))

		issueDay := day.AddDate(0, 0, 14)
		if elapsed, cpu, err = b.timedRun(ctx, issueDay, n, cmp.Or(last[1], time.Duration(n)*20*time.Millisecond), profile, "issues"); err != nil {
			return fmt.Errorf("round %d, issues: %w", r+1, err)
		}
		last[1] = elapsed
		if err := b.checkIssued(ctx, n, issueDay, allowance, total); err != nil {
			return fmt.Errorf("round %d: %w", r+1, err)
		}
		issues, cpuIssues = append(issues, float64(n)/elapsed.Seconds()), append(cpuIssues, float64(cpu)/float64(n))
		detail[1] = append(detail[1], fmt.Sprintf("%.0f", issues[r]))

		if elapsed, cpu, err = b.timedRun(ctx, issueDay, 0, cmp.Or(last[2], time.Duration(n)*time.Millisecond), "", ""); err != nil {
			return fmt.Errorf("round %d, idle: %w", r+1, err)
		}
		last[2] = elapsed
		idle, cpuIdle = append(idle, float64(elapsed)), append(cpuIdle, float64(cpu))
		detail[2] = append(detail[2], elapsed.Round(10*time.Millisecond).String())

		if err := b.clearOfSweep(ctx, cmp.Or(last[3], time.Minute)); err != nil {
			return err
		}
		start := time.Now()
		rate, cpuRef, _, err := b.ours(ctx, 8, ref, b.prepare)
		if err != nil {
			return fmt.Errorf("round %d, reference: %w", r+1, err)
		}
		last[3] = time.Since(start)
		refs, cpuRefs = append(refs, rate), append(cpuRefs, float64(cpuRef))
		detail[3] = append(detail[3], fmt.Sprintf("%.0f", rate))
	}
	mr := median(refs)
	fmt.Printf("%-24s %10s %10s %10s   %s\n", "", "ops/s", "CPU/op", "vs HTTP@8", "rounds")
	for _, row := range []struct {
		name      string
		rate, cpu []float64
		rounds    []string
	}{
		{"drafts (never)", drafts, cpuDrafts, detail[0]},
		{"issues (under_allowance)", issues, cpuIssues, detail[1]},
		{"reference (HTTP at 8)", refs, cpuRefs, detail[3]},
	} {
		m := median(row.rate)
		fmt.Printf("%-24s %10.0f %10s %9.0f%%   %s\n", row.name, m, time.Duration(median(row.cpu)).Round(time.Microsecond), 100*m/mr, strings.Join(row.rounds, " "))
	}
	fmt.Printf("%-24s %10s %10s %10s   %s\n", fmt.Sprintf("idle Run (%d live)", 2*n), time.Duration(median(idle)).Round(10*time.Millisecond),
		time.Duration(median(cpuIdle)).Round(time.Millisecond), "", strings.Join(detail[2], " "))
	return nil
}

// timedRun moves the service's clock to 08:00 UTC on day, waits for the
// background work before it and for the service's own sweep to be clear
// of the next need, and times one Run, which must make want runs. With
// profile set, it writes a CPU profile of the Run to profile.name.
func (b *bench) timedRun(ctx context.Context, day time.Time, want int, need time.Duration, profile, name string) (time.Duration, time.Duration, error) {
	// Statistics of the rows the last round made, as autovacuum would
	// have them by the next month.
	if _, err := b.pool.Exec(ctx, `ANALYZE`); err != nil {
		return 0, 0, err
	}
	if err := b.drain(ctx); err != nil {
		return 0, 0, err
	}
	if err := b.clearOfSweep(ctx, need); err != nil {
		return 0, 0, err
	}
	b.clock.Advance(day.Add(8 * time.Hour).Sub(b.clock.Now()))
	if profile != "" {
		f, err := os.Create(profile + "." + name)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, 0, err
		}
		defer pprof.StopCPUProfile()
	}
	start, cpu := time.Now(), processCPU()
	made, err := b.app.Schedules().Run(ctx)
	elapsed, cpu := time.Since(start), processCPU()-cpu
	if err != nil {
		return 0, 0, err
	}
	if len(made) != want {
		return 0, 0, fmt.Errorf("the Run made %d runs, want %d (did the service's own sweep run beside it?)", len(made), want)
	}
	for _, r := range made {
		if r.Status != schedules.RunDrafted {
			return 0, 0, fmt.Errorf("run %s of schedule %s is %s: %s", r.ID, r.ScheduleID, r.Status, r.Error)
		}
	}
	return elapsed, cpu, nil
}

// clearOfSweep waits until the service's schedules sweep is not running
// and not due within need (River enqueues it every scheduleSweepEvery
// from the last one's scheduled time), at most two intervals.
func (b *bench) clearOfSweep(ctx context.Context, need time.Duration) error {
	if need+10*time.Second >= scheduleSweepEvery {
		return fmt.Errorf("a timed phase expected to take %s does not fit between two of the service's sweeps (%s)", need, scheduleSweepEvery)
	}
	deadline := time.Now().Add(2 * scheduleSweepEvery)
	for time.Now().Before(deadline) {
		var state string
		var at time.Time
		err := b.pool.QueryRow(ctx, `SELECT state, scheduled_at FROM river_job
			WHERE kind = 'sweep' AND args->>'name' = 'schedules' ORDER BY id DESC LIMIT 1`).Scan(&state, &at)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// River inserts the first on start.
		case err != nil:
			return err
		case state == "completed" || state == "cancelled" || state == "discarded":
			if time.Until(at.Add(scheduleSweepEvery)) > need+10*time.Second {
				return nil
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the service's schedules sweep left no %s free within %s", need, 2*scheduleSweepEvery)
}

// createSchedules makes the 1,000 customers and, through
// schedules.Service.Create as the clerk, n schedules that issue never
// from first and n that issue under allowance from the 15th, monthly.
func (b *bench) createSchedules(ctx context.Context, n int, first time.Time, allowance uuid.UUID) error {
	customers := make([]uuid.UUID, billingCustomers)
	for i := range customers {
		c, err := invoices.CustomerCreate(ctx, b.pool, &invoices.Customer{
			ID: uuid.Must(uuid.NewV7()), Name: fmt.Sprintf("Customer %04d GmbH", i), Email: fmt.Sprintf("billing%04d@example.com", i), Currency: "EUR",
			Address:   party.Address{Lines: []string{"Marktplatz 1"}, Postcode: "80331", City: "München", Country: "DE"},
			CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		})
		if err != nil {
			return err
		}
		customers[i] = c.ID
	}
	svc := b.app.Schedules()
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		errMu  sync.Mutex
		failed error
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= 2*n {
					return
				}
				in := schedules.CreateInput{CustomerID: customers[i%billingCustomers], Every: "1 month", Start: first.Format(time.DateOnly),
					Lines: []invoices.LineInput{billingLine}, Issue: schedules.IssueNever}
				if i >= n {
					in.Start, in.Issue, in.AllowanceID = first.AddDate(0, 0, 14).Format(time.DateOnly), schedules.IssueUnderAllowance, &allowance
				}
				if _, err := svc.Create(ctx, b.clerk, capability.PathREST, in); err != nil {
					errMu.Lock()
					failed = cmp.Or(failed, err)
					errMu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return failed
}

// grantAllowance grants, through grant-allowance, an issue allowance for
// count invoices up to total in EUR, for every customer: requested by the
// clerk, approved by the bench's two approvers.
func (b *bench) grantAllowance(ctx context.Context, count int, total int64, reason string, second identity.Principal) (uuid.UUID, error) {
	input, err := json.Marshal(map[string]any{"capability": "issue", "customer_ids": nil, "currency": "EUR",
		"max_total": total, "max_count": count, "valid_until": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339),
		"reason": reason})
	if err != nil {
		return uuid.Nil, err
	}
	reg := b.app.Capabilities()
	invoke := func() (any, error) {
		call, err := reg.Prepare(allowances.CapGrant, input)
		if err != nil {
			return nil, err
		}
		call.Principal, call.Via = b.clerk, capability.PathREST
		return reg.Invoke(ctx, call)
	}
	_, err = invoke()
	pe, ok := problem.As(err)
	if !ok || pe.Code != approvals.CodeApprovalRequired {
		return uuid.Nil, fmt.Errorf("grant-allowance: want APPROVAL_REQUIRED, got %w", err)
	}
	aid := uuid.MustParse(pe.Extra["approval_id"].(string))
	for _, p := range []identity.Principal{b.approver, second} {
		if _, err := b.app.Approvals().Decide(ctx, p, capability.PathCLI, aid, etag.IfMatch{}, approvals.DecisionApprove, ""); err != nil {
			return uuid.Nil, err
		}
	}
	out, err := invoke()
	if err != nil {
		return uuid.Nil, fmt.Errorf("grant-allowance once approved: %w", err)
	}
	a, ok := out.(*allowances.Allowance)
	if !ok {
		return uuid.Nil, fmt.Errorf("grant-allowance returned %T", out)
	}
	return a.ID, nil
}

// checkIssued fails unless the n runs of the period starting on day are
// all issued, each drawing allowance, which is spent by exactly n draws
// of total/n, and every invoice number series is gapless.
func (b *bench) checkIssued(ctx context.Context, n int, day time.Time, allowance uuid.UUID, total int64) error {
	var runs, issued int
	if err := b.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE r.status = 'issued' AND r.allowance_id = $2
			AND i.status = 'issued' AND i.number IS NOT NULL)
		FROM schedule_runs r JOIN invoices i ON i.id = r.invoice_id WHERE r.period_start = $1`, day, allowance).Scan(&runs, &issued); err != nil {
		return err
	}
	if runs != n || issued != n {
		return fmt.Errorf("%d runs of the period from %s, %d issued under allowance %s: want %d and %d", runs, day.Format(time.DateOnly), issued, allowance, n, n)
	}
	var count int
	var drawn int64
	if err := b.pool.QueryRow(ctx, `SELECT max_count - remaining_count, max_total - remaining_total FROM allowances WHERE id = $1`,
		allowance).Scan(&count, &drawn); err != nil {
		return err
	}
	if count != n || drawn != int64(n)*total {
		return fmt.Errorf("allowance %s drawn %d times for %d, want %d for %d", allowance, count, drawn, n, int64(n)*total)
	}
	// Per series (the number without its sequence): n numbers, n
	// distinct, from 1 to n; and as many numbered invoices as the series'
	// counters have handed out.
	rows, err := b.pool.Query(ctx, `SELECT series FROM (
			SELECT regexp_replace(number, '[0-9]+$', '') AS series, count(*) AS n,
				count(DISTINCT substring(number FROM '[0-9]+$')::bigint) AS d,
				min(substring(number FROM '[0-9]+$')::bigint) AS lo, max(substring(number FROM '[0-9]+$')::bigint) AS hi
			FROM invoices WHERE number IS NOT NULL GROUP BY 1) s
		WHERE NOT (n = d AND lo = 1 AND hi = n)`)
	if err != nil {
		return err
	}
	bad, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("invoice numbers not gapless in %s", strings.Join(bad, ", "))
	}
	var numbered, handedOut int64
	if err := b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM invoices WHERE number IS NOT NULL),
		(SELECT coalesce(sum(last_seq), 0) FROM invoice_number_series)`).Scan(&numbered, &handedOut); err != nil {
		return err
	}
	if numbered != handedOut {
		return fmt.Errorf("%d numbered invoices, the series handed out %d numbers", numbered, handedOut)
	}
	return nil
}
