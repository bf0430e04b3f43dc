package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/schedules"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// scheduleJSON is a monthly schedule of customer from start that issues
// nothing, as POST /v1/schedules takes it, with the members of set.
func scheduleJSON(t *testing.T, customer uuid.UUID, start string, set map[string]any) string {
	t.Helper()
	in := map[string]any{"customer_id": customer, "every": "1 month", "start": start, "issue": "never",
		"lines": []map[string]any{{"description": "Hosting {period}", "quantity": "1", "unit_amount": 10000, "tax_rate_bps": 1900}}}
	for k, v := range set {
		in[k] = v
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	return string(b)
}

// scheduleCounts is what a refused command must leave as it was: the
// schedules, their runs, the invoices and the audit chain.
func scheduleCounts(t *testing.T, pool *pgxpool.Pool) [4]int {
	t.Helper()
	var n [4]int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM schedules), (SELECT count(*) FROM schedule_runs),
		(SELECT count(*) FROM invoices), (SELECT count(*) FROM audit_events)`).Scan(&n[0], &n[1], &n[2], &n[3]))
	return n
}

// shownSchedule is a schedule as the CLI prints it: every is its string.
type shownSchedule struct {
	schedules.Schedule
	Every string `json:"every"`
}

func decodeSchedule(t *testing.T, r result) *shownSchedule {
	t.Helper()
	require.Equal(t, 0, r.code, r.stderr)
	var s shownSchedule
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s), r.stdout)
	return &s
}

// A clerk creates a schedule starting today from the terminal, lists,
// shows and changes it (a stale --if-version is refused and changes
// nothing), runs the billing job, which drafts today's period once, reads
// the run and ends the schedule; each change is audited as the CLI's.
func TestSchedulesCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	pool := storetest.PoolFor(t, url)
	e := env{"DATABASE_URL": url}
	_, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: "dora", Role: identity.RoleClerk})
	require.NoError(t, err)
	customer := invoicetest.Customer(ctx, t, pool, invoicetest.CustomerOpts{Currency: "EUR"})
	today := time.Now().UTC().Format(time.DateOnly)

	created := decodeSchedule(t, invokeWithInput(ctx, e, scheduleJSON(t, customer.ID, today, nil), "schedules", "create", "--as", "dora"))
	require.Equal(t, customer.ID, created.CustomerID)
	require.Equal(t, "EUR", created.Currency, "the customer's currency")
	require.Equal(t, int64(1), created.Version)
	require.Equal(t, "1 month", created.Every)
	id := created.ID.String()

	r := invoke(ctx, e, "schedules", "list")
	require.Equal(t, 0, r.code, r.stderr)
	var list struct {
		Data    []shownSchedule `json:"data"`
		HasMore bool            `json:"has_more"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list.Data, 1)
	require.Equal(t, created.ID, list.Data[0].ID)
	require.False(t, list.HasMore)

	shown := decodeSchedule(t, invoke(ctx, e, "schedules", "show", id))
	require.Equal(t, created.ID, shown.ID)
	require.Nil(t, shown.DeletedAt)

	before := scheduleCounts(t, pool)
	r = invokeWithInput(ctx, e, `{"payment_terms_days": 30}`, "schedules", "update", id, "--as", "dora", "--if-version", "9")
	require.Equal(t, 1, r.code)
	require.Equal(t, fmt.Sprintf("invoiced: schedule %s changed since version 9 (it is at version 1 now): run `invoiced schedules show %s` again and make the change there\n", id, id), r.stderr)
	require.Equal(t, before, scheduleCounts(t, pool))
	require.Nil(t, decodeSchedule(t, invoke(ctx, e, "schedules", "show", id)).PaymentTermsDays, "the stale change left it as it was")

	updated := decodeSchedule(t, invokeWithInput(ctx, e, `{"payment_terms_days": 30, "end": "2099-12-31"}`, "schedules", "update", id, "--as", "dora", "--if-version", "1"))
	require.Equal(t, int64(2), updated.Version)
	require.Equal(t, 30, *updated.PaymentTermsDays)
	require.Equal(t, "2099-12-31", updated.End.String())
	updated = decodeSchedule(t, invokeWithInput(ctx, e, `{"payment_terms_days": null}`, "schedules", "update", "--as", "dora", id))
	require.Nil(t, updated.PaymentTermsDays, "null clears it")
	require.Equal(t, "2099-12-31", updated.End.String(), "a member left out stays")

	r = invoke(ctx, e, "schedules", "run")
	require.Equal(t, 0, r.code, r.stderr)
	var ran struct {
		Data []schedules.Run `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ran), r.stdout)
	require.Len(t, ran.Data, 1, r.stdout)
	run := ran.Data[0]
	require.Equal(t, created.ID, run.ScheduleID)
	require.Equal(t, schedules.RunDrafted, run.Status)
	require.Equal(t, today, run.PeriodStart.String())
	require.NotNil(t, run.InvoiceID)
	inv, err := invoices.InvoiceGetByID(ctx, pool, *run.InvoiceID)
	require.NoError(t, err)
	require.Equal(t, invoices.StatusDraft, inv.Status)
	require.Equal(t, customer.ID, inv.CustomerID)
	require.Equal(t, today, inv.ServicePeriod.Start.String())
	require.Equal(t, "Hosting "+today+" – "+run.PeriodEnd.String(), inv.Lines[0].Description)
	require.Equal(t, int64(11900), inv.Total)

	r = invoke(ctx, e, "schedules", "run")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"data": [], "has_more": false, "next_cursor": null}`, r.stdout, "today's period is drafted once")

	r = invoke(ctx, e, "schedules", "runs", id)
	require.Equal(t, 0, r.code, r.stderr)
	var runs struct {
		Data []schedules.Run `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &runs))
	require.Len(t, runs.Data, 1)
	require.Equal(t, run.ID, runs.Data[0].ID)
	require.Equal(t, *run.InvoiceID, *runs.Data[0].InvoiceID)

	deleted := decodeSchedule(t, invoke(ctx, e, "schedules", "delete", id, "--as", "dora"))
	require.NotNil(t, deleted.DeletedAt)
	r = invoke(ctx, e, "schedules", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"data": [], "has_more": false, "next_cursor": null}`, r.stdout)
	require.NotNil(t, decodeSchedule(t, invoke(ctx, e, "schedules", "show", id)).DeletedAt, "an ended schedule is still shown")
	_, err = invoices.InvoiceGetByID(ctx, pool, *run.InvoiceID)
	require.NoError(t, err, "its draft stays")

	rows, err := pool.Query(ctx, `SELECT type FROM audit_events WHERE subject_id = $1 AND event->>'via' = 'cli' ORDER BY seq`, id)
	require.NoError(t, err)
	var audited []string
	for rows.Next() {
		var typ string
		require.NoError(t, rows.Scan(&typ))
		audited = append(audited, typ)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"schedule.created", "schedule.updated", "schedule.updated", "schedule.deleted"}, audited)
}

// The billing run started from the terminal issues as serve's job does:
// in the business time zone's today, through the gate as the schedule's
// creator, drawing the standing allowance, numbered in the series
// INVOICED_NUMBER_PREFIX names.
func TestSchedulesCLIRunIssuesUnderAnAllowance(t *testing.T) {
	t.Parallel()
	b := setupApprovals(t)
	ctx := b.ctx
	_, err := identity.UserCreate(ctx, b.pool, identity.UserCreateParams{Username: "ada", Role: identity.RoleAdmin})
	require.NoError(t, err)
	setSeller(ctx, t, b.env, "ada")
	aid := b.request(t, b.clerk, "grant-allowance", uuid.NewString())
	_, err = b.pool.Exec(ctx, `UPDATE approval_requests SET status = 'consumed', consumed_at = now(), consumed_by = $2 WHERE id = $1`, aid, uuid.New())
	require.NoError(t, err)
	allowance := uuid.New()
	_, err = b.pool.Exec(ctx, `INSERT INTO allowances (id, kind, currency, max_total, max_count, remaining_total, remaining_count,
		valid_until, reason, requested_by, approval_id, deciders, created_at)
		VALUES ($1, 'issue', 'EUR', 500000, 20, 500000, 20, $2, 'the monthly run', $3, $4, ARRAY[$5::uuid], now())`,
		allowance, time.Now().Add(24*time.Hour), b.clerk.UserID, aid, b.bob.UserID)
	require.NoError(t, err)
	customer := invoicetest.Customer(ctx, t, b.pool, invoicetest.CustomerOpts{Currency: "EUR"})

	// UTC+14: from 10:00 UTC on, its today is UTC's tomorrow, and a run
	// reading UTC's today would draft nothing.
	const zone = "Pacific/Kiritimati"
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	e := env{"DATABASE_URL": b.env["DATABASE_URL"], "INVOICED_BUSINESS_TIMEZONE": zone, "INVOICED_NUMBER_PREFIX": "NL"}
	today := time.Now().In(loc).Format(time.DateOnly)
	created := decodeSchedule(t, invokeWithInput(ctx, e,
		scheduleJSON(t, customer.ID, today, map[string]any{"issue": "under_allowance", "allowance_id": allowance}), "schedules", "create", "--as", "clara"))
	require.Equal(t, schedules.IssueUnderAllowance, created.Issue)

	r := invoke(ctx, e, "schedules", "run")
	require.Equal(t, 0, r.code, r.stderr)
	var ran struct {
		Data []schedules.Run `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ran), r.stdout)
	require.Len(t, ran.Data, 1, r.stdout)
	require.Equal(t, schedules.RunIssued, ran.Data[0].Status, "as it is after the run, not as it was drafted: %s", r.stdout)
	require.Equal(t, allowance, *ran.Data[0].AllowanceID)
	inv, err := invoices.InvoiceGetByID(ctx, b.pool, *ran.Data[0].InvoiceID)
	require.NoError(t, err)
	require.Equal(t, invoices.StatusIssued, inv.Status)
	require.True(t, strings.HasPrefix(*inv.Number, "NL-"), *inv.Number)
	var left int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT remaining_count FROM allowances WHERE id = $1`, allowance).Scan(&left))
	require.Equal(t, 19, left)
	var via string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT event->>'via' FROM audit_events WHERE type = 'invoice.issued' AND subject_id = $1`, inv.ID.String()).Scan(&via))
	require.Equal(t, "system", via, "the job issues, as the schedule's creator")
}

// A command the schedules cannot run says why in one sentence, exits as
// the other commands do (2: the command line; 1: refused) and writes
// nothing: not the schedule, not a run, not an audit event.
func TestSchedulesCLIRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	pool := storetest.PoolFor(t, url)
	e := env{"DATABASE_URL": url}
	for name, role := range map[string]identity.Role{"dora": identity.RoleClerk, "bob": identity.RoleApprover, "ex": identity.RoleClerk} {
		u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: role})
		require.NoError(t, err)
		if name == "ex" {
			require.NoError(t, identity.UserSetDisabled(ctx, pool, u.ID, true))
		}
	}
	customer := invoicetest.Customer(ctx, t, pool, invoicetest.CustomerOpts{Currency: "EUR"})
	start := time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly)
	good := scheduleJSON(t, customer.ID, start, nil)
	id := decodeSchedule(t, invokeWithInput(ctx, e, good, "schedules", "create", "--as", "dora")).ID.String()
	unknown := uuid.NewString()

	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		says  string // in the first line of standard error
	}{
		{"no subcommand", "", []string{"schedules"}, 2, "invoiced schedules: name one of list, show, runs, create, update, delete or run"},
		{"unknown subcommand", "", []string{"schedules", "frob"}, 2, `invoiced schedules: there is no "frob"`},
		{"unknown flag", good, []string{"schedules", "create", "--as", "dora", "--bogus"}, 2, "invoiced schedules create: -bogus is not a flag of this command"},
		{"no --as", good, []string{"schedules", "create"}, 2, "invoiced schedules create: --as is required"},
		{"no id", "", []string{"schedules", "show"}, 2, "invoiced schedules show: name one schedule by the ID `invoiced schedules list` prints"},
		{"two ids", "", []string{"schedules", "delete", id, id, "--as", "dora"}, 2, "invoiced schedules delete: name one schedule"},
		{"bad --if-version", "{}", []string{"schedules", "update", id, "--as", "dora", "--if-version", "x"}, 2, `invoiced schedules update: "x" is not a value -if-version takes`},
		{"a word too many", "", []string{"schedules", "run", "now"}, 2, `invoiced schedules run: "now" is one word too many`},
		{"bad id", "", []string{"schedules", "show", "nope"}, 1, `invoiced: there is no schedule "nope": ` + "`invoiced schedules list` prints"},
		{"unknown id", "", []string{"schedules", "runs", unknown}, 1, fmt.Sprintf("invoiced: there is no schedule %q", unknown)},
		{"unknown id to change", `{"count": 3}`, []string{"schedules", "update", unknown, "--as", "dora"}, 1, fmt.Sprintf("invoiced: there is no schedule %q", unknown)},
		{"unknown id to end", "", []string{"schedules", "delete", unknown, "--as", "dora"}, 1, fmt.Sprintf("invoiced: there is no schedule %q", unknown)},
		{"an approver creates", good, []string{"schedules", "create", "--as", "bob"}, 1, "invoiced: the approver role may"},
		{"an approver changes", `{"count": 3}`, []string{"schedules", "update", id, "--as", "bob"}, 1, "invoiced: the approver role may"},
		{"an approver ends", "", []string{"schedules", "delete", id, "--as", "bob"}, 1, "invoiced: the approver role may"},
		{"nobody", good, []string{"schedules", "create", "--as", "nobody"}, 1, `invoiced: there is no user "nobody" to act as: ` + "`invoiced users list` lists them"},
		{"a disabled clerk", good, []string{"schedules", "create", "--as", "ex"}, 1, "invoiced: user ex is disabled"},
		{"not JSON", "{every:", []string{"schedules", "create", "--as", "dora"}, 1, "invoiced: standard input is not JSON: give a schedule as POST /v1/schedules takes it"},
		{"a bad cadence", scheduleJSON(t, customer.ID, start, map[string]any{"every": "1 fortnight"}), []string{"schedules", "create", "--as", "dora"}, 1, `invoiced: every "1 fortnight" is not a cadence`},
		{"an end before the start", scheduleJSON(t, customer.ID, start, map[string]any{"end": "2020-01-01"}), []string{"schedules", "create", "--as", "dora"}, 1, "invoiced: end is 2020-01-01, before the start"},
		{"a member it lacks", scheduleJSON(t, customer.ID, start, map[string]any{"colour": "red"}), []string{"schedules", "create", "--as", "dora"}, 1, "invoiced: colour"},
		{"the start is fixed", `{"start": "2030-01-01"}`, []string{"schedules", "update", id, "--as", "dora"}, 1, "invoiced: start"},
		{"a count of 0", `{"count": 0}`, []string{"schedules", "update", id, "--as", "dora"}, 1, "invoiced: count must be at least 1, not 0"},
		{"the id in the JSON", fmt.Sprintf(`{"schedule_id": %q}`, id), []string{"schedules", "update", id, "--as", "dora"}, 1, "invoiced: schedule_id is the ID argument; leave it out of the JSON"},
	} {
		before := scheduleCounts(t, pool)
		r := invokeWithInput(ctx, e, tc.stdin, tc.args...)
		require.Equal(t, tc.code, r.code, "%s: %s", tc.name, r.stderr)
		first, rest, _ := strings.Cut(r.stderr, "\n")
		require.True(t, strings.HasPrefix(first, tc.says), "%s: the first line is %q", tc.name, first)
		if tc.code == 1 {
			require.Empty(t, rest, "%s: one sentence", tc.name)
		} else {
			require.Contains(t, rest, "Usage", "%s: the usage follows", tc.name)
		}
		require.Empty(t, r.stdout, tc.name)
		require.Equal(t, before, scheduleCounts(t, pool), "%s wrote nothing", tc.name)
	}

	r := invoke(ctx, e, "schedules", "--help")
	require.Equal(t, 0, r.code)
	require.Equal(t, schedulesUsage+"\n", r.stdout)
	r = invoke(ctx, e, "schedules", "update", "--help")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stderr, "--if-version")
	require.Contains(t, r.stderr, "invoiced schedules update 0193… --as dora --if-version 1", "an example")
}
