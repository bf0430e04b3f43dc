// Command issue is `make bench-issue`: it measures issuing approved draft
// invoices over HTTP (auth, schema validation, the approval gate, audit,
// gapless number) at several concurrencies, and a pgbench script of the
// same SQL statements against the same database, and prints issues/s for
// both and their ratio. See BENCHMARKS.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-issue:", err)
		os.Exit(1)
	}
}

type options struct {
	admin   string
	dbName  string
	n       int
	rounds  int
	levels  []int
	pool    int
	pgbench string
	verbose bool
	profile string
}

func parseFlags() (options, error) {
	var o options
	def := os.Getenv("INVOICED_TEST_DATABASE_URL")
	if def == "" {
		def = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	flag.StringVar(&o.admin, "admin-url", def, "a URL whose user may CREATE DATABASE")
	flag.StringVar(&o.dbName, "db", "invoiced_bench_issue", "the benchmark database (dropped and recreated)")
	flag.IntVar(&o.n, "n", 800, "issues per round, level and side")
	flag.IntVar(&o.rounds, "rounds", 3, "alternating rounds per level; the median of each side is reported")
	levels := flag.String("c", "1,8,32", "concurrency levels")
	flag.IntVar(&o.pool, "pool", 0, "server pool size (0: the serve default, 4 per core, at least 8)")
	flag.StringVar(&o.pgbench, "pgbench", "pgbench", "the pgbench binary")
	flag.BoolVar(&o.verbose, "v", false, "print pgbench's report with per-statement latencies")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the HTTP runs to this file")
	flag.Parse()
	for _, s := range strings.Split(*levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 {
			return o, fmt.Errorf("bad concurrency %q", s)
		}
		o.levels = append(o.levels, c)
	}
	return o, nil
}

type bench struct {
	o        options
	url      string
	pool     *pgxpool.Pool
	app      *app.App
	base     string
	clerk    identity.Principal
	approver identity.Principal
	token    string
	customer *invoices.Customer
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	ctx := context.Background()
	b := &bench{o: o}
	if err := b.setup(ctx); err != nil {
		return err
	}
	defer b.pool.Close()
	defer b.app.Close()

	fmt.Printf("bench-issue: %d issues per round, level and side; %d alternating rounds (median shown); server pool %d conns\n\n",
		o.n, o.rounds, b.pool.Config().MaxConns)
	fmt.Printf("%-12s %14s %14s %8s   %s\n", "concurrency", "ours (HTTP)/s", "raw SQL/s", "ratio", "rounds (ours/raw)")
	for _, c := range o.levels {
		n := o.n - o.n%c
		var ours, raw []float64
		var detail []string
		// Alternating rounds: load from elsewhere on the machine drifts,
		// and alternation spreads it over both sides.
		for range o.rounds {
			o1, err := b.ours(ctx, c, n)
			if err != nil {
				return fmt.Errorf("ours at %d: %w", c, err)
			}
			r1, err := b.raw(ctx, c, n)
			if err != nil {
				return fmt.Errorf("raw at %d: %w", c, err)
			}
			ours, raw = append(ours, o1), append(raw, r1)
			detail = append(detail, fmt.Sprintf("%.0f/%.0f", o1, r1))
		}
		mo, mr := median(ours), median(raw)
		fmt.Printf("%-12d %14.0f %14.0f %7.0f%%   %s\n", c, mo, mr, 100*mo/mr, strings.Join(detail, " "))
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (b *bench) setup(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.o.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{b.o.dbName}.Sanitize()
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+ident+` WITH (FORCE)`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+ident); err != nil {
		return err
	}
	b.url = withDatabase(b.o.admin, b.o.dbName)
	sqlDB, err := migrations.Open(b.url)
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	prov, err := migrations.NewProvider(sqlDB, nil)
	if err != nil {
		return err
	}
	if _, err := prov.Up(ctx); err != nil {
		return err
	}
	if b.pool, err = store.Open(ctx, store.PoolConfig{URL: b.url, MaxConns: int32(b.o.pool)}); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if b.app, err = app.New(ctx, app.Config{}, b.pool, log); err != nil {
		return err
	}
	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return b.pool.Ping(ctx) })
	b.app.Routes(e)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, e) }() //nolint:gosec // a local benchmark server
	b.base = "http://" + ln.Addr().String()

	clerk, err := identity.UserCreate(ctx, b.pool, identity.UserCreateParams{Username: "bench-clerk", Role: identity.RoleClerk})
	if err != nil {
		return err
	}
	appr, err := identity.UserCreate(ctx, b.pool, identity.UserCreateParams{Username: "bench-approver", Role: identity.RoleApprover})
	if err != nil {
		return err
	}
	b.clerk, b.approver = clerk.Principal(), appr.Principal()
	if b.token, err = identity.TokenCreate(ctx, b.pool, clerk.ID, "bench"); err != nil {
		return err
	}
	b.customer, err = invoices.CustomerCreate(ctx, b.pool, &invoices.Customer{
		ID: uuid.Must(uuid.NewV7()), Name: "Bench GmbH", Email: "bench@example.com", Currency: "EUR",
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	})
	return err
}

func withDatabase(u, name string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		q := ""
		if j := strings.IndexByte(rest, '?'); j >= 0 {
			rest, q = rest[:j], rest[j:]
		}
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			rest = rest[:j]
		}
		return u[:i+3] + rest + "/" + name + q
	}
	return u + " dbname=" + name
}

// item is a draft with an approved request for issuing it.
type item struct {
	invoice, approval uuid.UUID
	inputHash         string
}

// prepare creates n drafts and an approved issue-invoice request for each,
// through the same capability the HTTP route runs, so the binding (the
// effective-input hash) is exactly the one the timed calls present.
func (b *bench) prepare(ctx context.Context, n int) ([]item, error) {
	items := make([]item, n)
	svc := b.app.Approvals()
	reg := b.app.Capabilities()
	lines, sub, tax, total, err := invoices.ComputeLines([]invoices.LineInput{{Description: "Consulting", Quantity: 2, UnitAmount: 5000, TaxRateBPS: 2000}})
	if err != nil {
		return nil, err
	}
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		errMu  sync.Mutex
		first  error
		record = func(err error) {
			errMu.Lock()
			if first == nil {
				first = err
			}
			errMu.Unlock()
		}
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				inv, err := invoices.InvoiceCreate(ctx, b.pool, &invoices.Invoice{
					ID: uuid.Must(uuid.NewV7()), CustomerID: b.customer.ID, Currency: "EUR",
					Lines: lines, Subtotal: sub, TaxTotal: tax, Total: total,
					CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
				})
				if err != nil {
					record(err)
					return
				}
				call, err := reg.Prepare(invoices.CapIssue, []byte(fmt.Sprintf(`{"invoice_id":%q}`, inv.ID)))
				if err != nil {
					record(err)
					return
				}
				call.Principal, call.Via = b.clerk, capability.PathREST
				_, err = reg.Invoke(ctx, call)
				pe, ok := problem.As(err)
				if !ok || pe.Code != approvals.CodeApprovalRequired {
					record(fmt.Errorf("want APPROVAL_REQUIRED, got %w", err))
					return
				}
				aid := uuid.MustParse(pe.Extra["approval_id"].(string))
				if _, err := svc.Decide(ctx, b.approver, capability.PathCLI, aid, 0, approvals.DecisionApprove, ""); err != nil {
					record(err)
					return
				}
				items[i] = item{invoice: inv.ID, approval: aid, inputHash: call.InputHash}
			}
		}()
	}
	wg.Wait()
	return items, first
}

// ours issues n approved drafts over HTTP with c concurrent clients and
// returns issues per second.
func (b *bench) ours(ctx context.Context, c, n int) (float64, error) {
	items, err := b.prepare(ctx, n)
	if err != nil {
		return 0, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}}
	work := make(chan uuid.UUID, n)
	for _, it := range items {
		work <- it.invoice
	}
	close(work)
	var (
		wg     sync.WaitGroup
		failed atomic.Int64
		sample atomic.Value
	)
	if b.o.profile != "" {
		f, err := os.Create(fmt.Sprintf("%s.c%d", b.o.profile, c))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/v1/invoices/"+id.String()+"/issue", nil)
				req.Header.Set("Authorization", "Bearer "+b.token)
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					sample.Store(err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					sample.Store(fmt.Sprintf("%d %s", resp.StatusCode, body))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		return 0, fmt.Errorf("%d of %d issues failed, e.g. %v", f, n, sample.Load())
	}
	return float64(n) / elapsed.Seconds(), nil
}

// auditLockKey is audit's advisory lock key ("auditcha").
const auditLockKey int64 = 0x61756469_74636861

// rawScript is the issue transaction as SQL, statement for statement what
// the service sends (invoice lock and lines, customer, the gate's lookup
// and the approval policy's rules, consume and notify, two audit appends, the numbered update), with
// the audit events built in SQL. Pipelines mirror the statements pgx
// sends as one batch (consume + notify; each audit lock + insert). The
// work item lookup before BEGIN stands in for the HTTP request naming the
// invoice.
const rawScript = `\set i :i + 1
\set k :client_id * :per + :i
SELECT invoice_id AS inv, approval_id AS appr, input_hash AS ih, customer_id AS cust FROM bench_queue WHERE k = :k \gset
BEGIN;
SELECT id, number, status, customer_id, currency, due_date, memo, subtotal, tax_total, total, issued_at, voided_at, paid_at, version, created_at, updated_at FROM invoices WHERE id = :inv FOR UPDATE;
SELECT invoice_id, description, quantity, unit_amount, tax_rate_bps, amount, tax_amount FROM invoice_lines WHERE invoice_id = ANY(ARRAY[:inv::uuid]) ORDER BY invoice_id, position;
SELECT id, name, email, currency, version, created_at, updated_at FROM customers WHERE id = :cust;
SELECT r.id, r.capability, r.status, r.input, r.input_hash, r.target_type, r.target_id, r.target_version, r.amount, r.currency, r.snapshot, r.requested_by, u.username, r.requested_via, r.reason, r.required_approvals, r.created_at, r.updated_at, r.expires_at, r.decided_at, r.consumed_at, r.consumed_by, r.expiry_reported_at IS NOT NULL, r.version, r.policy_version, r.policy_rule_id, r.policy_required, r.required_raised_version FROM approval_requests r JOIN users u ON u.id = r.requested_by WHERE r.capability = 'issue-invoice' AND r.target_type = 'invoice' AND r.target_id = :inv AND r.input_hash = :ih ORDER BY r.created_at DESC, r.id DESC LIMIT 1 FOR UPDATE OF r;
SELECT v.version, r.id, r.capability, coalesce(r.currency, '*'), r.min_amount, r.min_amount_major, r.approvers, r.from_version, r.to_version FROM (SELECT max(version) AS version FROM approval_policy_versions) v LEFT JOIN approval_policy_rules r ON r.to_version IS NULL AND r.capability = 'issue-invoice' AND (r.currency = 'EUR' OR r.currency IS NULL);
\startpipeline
UPDATE approval_requests SET status = 'consumed', consumed_at = now(), consumed_by = gen_random_uuid(), updated_at = now(), version = version + 1 WHERE id = :appr AND status = 'approved';
SELECT pg_notify('invoiced_approvals', '{"id":"' || :appr::text || '","status":"consumed","version":3}');
\endpipeline
\startpipeline
SELECT pg_advisory_xact_lock(AUDITKEY);
WITH ev AS (SELECT '{"actor":"bench-clerk","data":{"invocation_id":"' || gen_random_uuid() || '"},"occurred_at":"' || (to_json(now() AT TIME ZONE 'UTC') #>> '{}') || 'Z' || '","subject_id":"' || :appr::text || '","subject_type":"approval","type":"approval.consumed","via":"rest"}' AS t),
     head AS (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1)
INSERT INTO audit_events (seq, event, prev_hash, hash)
SELECT coalesce((SELECT seq FROM head), 0) + 1, ev.t::jsonb, coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')),
       sha256(coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')) || convert_to(ev.t, 'UTF8')) FROM ev RETURNING seq;
\endpipeline
\startpipeline
SELECT pg_advisory_xact_lock(AUDITKEY);
WITH ev AS (SELECT '{"actor":"bench-clerk","data":{"approval_id":"' || :appr::text || '"},"occurred_at":"' || (to_json(now() AT TIME ZONE 'UTC') #>> '{}') || 'Z' || '","subject_id":"' || :inv::text || '","subject_type":"invoice","type":"invoice.issued","via":"rest"}' AS t),
     head AS (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1)
INSERT INTO audit_events (seq, event, prev_hash, hash)
SELECT coalesce((SELECT seq FROM head), 0) + 1, ev.t::jsonb, coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')),
       sha256(coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')) || convert_to(ev.t, 'UTF8')) FROM ev RETURNING seq;
\endpipeline
WITH seq AS (INSERT INTO invoice_number_series AS s (prefix, year, last_seq) VALUES ('INV', extract(year FROM now())::int, 1) ON CONFLICT (prefix, year) DO UPDATE SET last_seq = s.last_seq + 1 RETURNING last_seq)
UPDATE invoices SET status = 'issued', number = 'INV-' || extract(year FROM now())::int || '-' || lpad(seq.last_seq::text, greatest(6, length(seq.last_seq::text)), '0'), issued_at = now(), version = version + 1, updated_at = now() FROM seq WHERE id = :inv AND status = 'draft'
RETURNING invoices.id, invoices.number, invoices.status, invoices.customer_id, invoices.currency, invoices.due_date, invoices.memo, invoices.subtotal, invoices.tax_total, invoices.total, invoices.issued_at, invoices.voided_at, invoices.paid_at, invoices.version, invoices.created_at, invoices.updated_at;
END;
`

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// raw runs the same issue transaction as a pgbench script over n fresh
// approved drafts with c clients and returns issues per second.
func (b *bench) raw(ctx context.Context, c, n int) (float64, error) {
	items, err := b.prepare(ctx, n)
	if err != nil {
		return 0, err
	}
	if _, err := b.pool.Exec(ctx, `DROP TABLE IF EXISTS bench_queue; CREATE TABLE bench_queue (k int PRIMARY KEY, invoice_id uuid, approval_id uuid, input_hash text, customer_id uuid)`); err != nil {
		return 0, err
	}
	per := n / c
	rows := make([][]any, 0, n)
	for i, it := range items {
		// Client j runs i = 1..per, so its items are k = j*per+1 … j*per+per.
		rows = append(rows, []any{i + 1, it.invoice, it.approval, it.inputHash, b.customer.ID})
	}
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"bench_queue"}, []string{"k", "invoice_id", "approval_id", "input_hash", "customer_id"}, pgx.CopyFromRows(rows)); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "bench-issue")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "issue.sql")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(rawScript, "AUDITKEY", strconv.FormatInt(auditLockKey, 10))), 0o600); err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, b.o.pgbench, "-n", "-r", "-M", "prepared", "-f", script,
		"-c", strconv.Itoa(c), "-j", strconv.Itoa(min(c, 2)), "-t", strconv.Itoa(per),
		"-D", "i=0", "-D", "per="+strconv.Itoa(per), b.url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w\n%s", err, out)
	}
	if b.o.verbose {
		fmt.Printf("%s\n", out)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench output without tps:\n%s", out)
	}
	var issued int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM invoices i JOIN bench_queue q ON q.invoice_id = i.id WHERE i.status = 'issued'`).Scan(&issued); err != nil {
		return 0, err
	}
	if issued != n {
		return 0, errors.New("pgbench did not issue every draft: " + strconv.Itoa(issued) + " of " + strconv.Itoa(n) + "\n" + string(out))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
