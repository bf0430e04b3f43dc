// Command issue is `make bench-issue`: it measures issuing approved draft
// invoices over HTTP (auth, schema validation, the approval gate, audit,
// gapless number) at several concurrencies, and a pgbench script of the
// same SQL statements against the same database, and prints issues/s for
// both and their ratio. See BENCHMARKS.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/clocktest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/webhooks"
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
	keys    bool
	// allowance compares issuing under one standing allowance with one
	// approval each (make bench-allowance), instead of with raw SQL.
	allowance bool
	// billingRun times the schedules' billing run (make
	// bench-billing-run) over schedules each; the reference is ours at 8.
	billingRun bool
	schedules  int
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
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the HTTP runs to this file (with -billing-run also of the first round's two timed Runs, to FILE.drafts and FILE.issues)")
	flag.BoolVar(&o.keys, "keys", true, "send an Idempotency-Key with each issue, as a client that retries safely does")
	flag.BoolVar(&o.allowance, "allowance", false, "compare issuing under one standing allowance with one approval each (make bench-allowance)")
	flag.BoolVar(&o.billingRun, "billing-run", false, "time one billing run of -schedules schedules falling due, drafting and issuing under an allowance, beside ours at 8 (make bench-billing-run)")
	flag.IntVar(&o.schedules, "schedules", 10000, "schedules falling due per timed billing run (-billing-run)")
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
	recv     *receiver
	// clock is the service's invoicing clock with -billing-run, which
	// moves it to each period the schedules run by; nil otherwise.
	clock *clocktest.Running
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	ctx := context.Background()
	b := &bench{o: o}
	if o.billingRun {
		b.clock = clocktest.NewRunning()
	}
	if err := b.setup(ctx); err != nil {
		return err
	}
	defer b.pool.Close()
	defer b.app.Close()
	if o.allowance {
		return b.allowanceRun(ctx)
	}
	if o.billingRun {
		return b.billingRun(ctx)
	}

	fmt.Printf("bench-issue: %d issues per round, level and side; %d alternating rounds (median shown); server pool %d conns; Idempotency-Key sent: %t\n",
		o.n, o.rounds, b.pool.Config().MaxConns, o.keys)
	fmt.Printf("CPU/issue is this process's (the service and its clients) during ours\n\n")
	fmt.Printf("%-12s %14s %14s %8s %10s   %s\n", "concurrency", "ours (HTTP)/s", "raw SQL/s", "ratio", "CPU/issue", "rounds (ours/raw)")
	var delivered []string
	for _, c := range o.levels {
		n := o.n - o.n%c
		var ours, raw, rates, cpu []float64
		var detail []string
		var latencies []time.Duration
		// Alternating rounds: load from elsewhere on the machine drifts,
		// and alternation spreads it over both sides.
		for range o.rounds {
			before := processCPU()
			o1, _, d, err := b.ours(ctx, c, n, b.prepare)
			if err != nil {
				return fmt.Errorf("ours at %d: %w", c, err)
			}
			cpu = append(cpu, float64(processCPU()-before)/float64(n))
			r1, err := b.raw(ctx, c, n)
			if err != nil {
				return fmt.Errorf("raw at %d: %w", c, err)
			}
			ours, raw = append(ours, o1), append(raw, r1)
			rates, latencies = append(rates, d.perSecond), append(latencies, d.latencies...)
			detail = append(detail, fmt.Sprintf("%.0f/%.0f", o1, r1))
		}
		mo, mr := median(ours), median(raw)
		fmt.Printf("%-12d %14.0f %14.0f %7.0f%% %10s   %s\n", c, mo, mr, 100*mo/mr, time.Duration(median(cpu)).Round(time.Microsecond), strings.Join(detail, " "))
		delivered = append(delivered, fmt.Sprintf("%-12d %14.0f %14s", c, median(rates), p99(latencies).Round(time.Millisecond)))
	}
	fmt.Printf("\ninvoice.issued webhooks to a local receiver during ours (target: p99 ≤ 1 s)\n%-12s %14s %14s\n", "concurrency", "deliveries/s", "p99 commit→delivery")
	for _, l := range delivered {
		fmt.Println(l)
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
	cfg := app.Config{Webhooks: webhooks.Config{AllowPrivate: true}}
	if b.clock != nil {
		cfg.Invoices.Now = b.clock.Now
	}
	if b.app, err = app.New(ctx, cfg, b.pool, log); err != nil {
		return err
	}
	if b.recv, err = startReceiver(); err != nil {
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
	// A seller and a customer with all a legal invoice says of them, so
	// that issue readiness lets the drafts through.
	admin, err := identity.UserCreate(ctx, b.pool, identity.UserCreateParams{Username: "bench-admin", Role: identity.RoleAdmin})
	if err != nil {
		return err
	}
	if _, err := seller.NewService(b.pool, nil).Set(ctx, admin.Principal(), capability.PathCLI, seller.Details{
		LegalName: "Bench Seller GmbH", VATID: "DE136308783",
		Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"},
	}, seller.IfNoneSet()); err != nil {
		return err
	}
	b.customer, err = invoices.CustomerCreate(ctx, b.pool, &invoices.Customer{
		ID: uuid.Must(uuid.NewV7()), Name: "Bench GmbH", Email: "bench@example.com", Currency: "EUR",
		Address:   party.Address{Lines: []string{"Marktplatz 1"}, Postcode: "80331", City: "München", Country: "DE"},
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	})
	if err != nil {
		return err
	}
	return b.subscribe(ctx, admin.Principal())
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
	lines, sub, tax, total, err := invoices.ComputeLines([]invoices.LineInput{{Description: "Consulting", Quantity: 2 * quantity.One, UnitAmount: 5000, TaxRateBPS: 2000}})
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
				if _, err := svc.Decide(ctx, b.approver, capability.PathCLI, aid, etag.IfMatch{}, approvals.DecisionApprove, ""); err != nil {
					record(err)
					return
				}
				items[i] = item{invoice: inv.ID, approval: aid, inputHash: call.InputHash}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	// The database is hours old in production and minutes old here:
	// without statistics the planner guesses a table of a few pages, and
	// reads a request's decisions or an invoice's lines by a sequential
	// scan (0.4–0.7 ms instead of 0.04 ms each at 10⁴ rows). Autovacuum
	// would analyze them, just not within a round.
	if _, err := b.pool.Exec(ctx, `ANALYZE`); err != nil {
		return nil, err
	}
	return items, nil
}

// ours issues n drafts that prepare made issuable over HTTP with c
// concurrent clients and returns issues per second and the process's CPU
// per issue while they ran, then waits for their invoice.issued
// deliveries and returns what they measured.
func (b *bench) ours(ctx context.Context, c, n int, prepare func(context.Context, int) ([]item, error)) (float64, time.Duration, deliveries, error) {
	items, err := prepare(ctx, n)
	if err != nil {
		return 0, 0, deliveries{}, err
	}
	if err := b.drain(ctx); err != nil {
		return 0, 0, deliveries{}, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}}
	work := make(chan int, n)
	ids := make([]uuid.UUID, n)
	committed := make([]time.Time, n)
	for i, it := range items {
		ids[i] = it.invoice
		work <- i
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
			return 0, 0, deliveries{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, 0, deliveries{}, err
		}
		defer pprof.StopCPUProfile()
	}
	start, cpu := time.Now(), processCPU()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/v1/invoices/"+ids[i].String()+"/issue", nil)
				req.Header.Set("Authorization", "Bearer "+b.token)
				if b.o.keys {
					req.Header.Set("Idempotency-Key", "issue-"+ids[i].String())
				}
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					sample.Store(err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				committed[i] = time.Now()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
					sample.Store(fmt.Sprintf("%d %s", resp.StatusCode, body))
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU()-cpu
	if f := failed.Load(); f > 0 {
		return 0, 0, deliveries{}, fmt.Errorf("%d of %d issues failed, e.g. %v", f, n, sample.Load())
	}
	d, err := b.measureDeliveries(start, ids, committed)
	return float64(n) / elapsed.Seconds(), cpu / time.Duration(n), d, err
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
