// Command receivables is `make bench-receivables`: the receivables report
// (GET /v1/reports/receivables, by currency and by customer) and the
// ?overdue=true invoice list (its first page and a page deep in it),
// over HTTP against the whole service in-process, at 10^3 and 10^6
// invoices of which 10 % are open (issued, owing). It prints the median
// and 95th percentile latency of each, and the ratios the targets name.
// See BENCHMARKS.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/benchkit"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-receivables:", err)
		os.Exit(1)
	}
}

type options struct {
	admin  string
	dbName string
	sizes  []int
	n      int
	deep   int
}

func parseFlags() (options, error) {
	var o options
	def := os.Getenv("INVOICED_TEST_DATABASE_URL")
	if def == "" {
		def = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	flag.StringVar(&o.admin, "admin-url", def, "a URL whose user may CREATE DATABASE (and is a superuser: the load skips triggers)")
	flag.StringVar(&o.dbName, "db", "invoiced_bench_receivables", "the benchmark database (created per size, dropped once measured)")
	sizes := flag.String("sizes", "1000,1000000", "invoice counts")
	flag.IntVar(&o.n, "n", 40, "timed requests per measurement")
	flag.IntVar(&o.deep, "deep", 20, "the page of the overdue list measured as deep")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 100 {
			return o, fmt.Errorf("bad size %q", s)
		}
		o.sizes = append(o.sizes, v)
	}
	return o, nil
}

// result is one size's medians and 95th percentiles, in milliseconds.
type result struct {
	size                 int
	report, byCustomer   [2]float64
	listFirst, listDeep  [2]float64
	open, overdue, pages int
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var results []result
	for _, size := range o.sizes {
		fmt.Fprintf(os.Stderr, "loading %d invoices…\n", size)
		r, err := measure(ctx, o, size)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	print(results)
	return nil
}

// measure loads size invoices into a fresh database, serves it, and times
// each request o.n times after a warm-up.
func measure(ctx context.Context, o options, size int) (result, error) {
	// A million invoices are half a gigabyte of a shared disk: dropped
	// once measured.
	benchkit.DropDB(ctx, o.admin, o.dbName)
	dbURL, err := benchkit.CreateDB(ctx, o.admin, o.dbName)
	if err != nil {
		return result{}, err
	}
	defer benchkit.DropDB(context.Background(), o.admin, o.dbName)
	pool, err := store.Open(ctx, store.PoolConfig{URL: dbURL})
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	r := result{size: size}
	if err := load(ctx, pool, size); err != nil {
		return r, err
	}
	base, token, closeApp, err := serve(ctx, pool)
	if err != nil {
		return r, err
	}
	defer closeApp()
	c := &client{base: base, token: token}
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'issued'),
		count(*) FILTER (WHERE status = 'issued' AND due_date < current_date) FROM invoices`).Scan(&r.open, &r.overdue); err != nil {
		return r, err
	}
	if r.report, err = c.time(o.n, "/v1/reports/receivables"); err != nil {
		return r, err
	}
	if r.byCustomer, err = c.time(o.n, "/v1/reports/receivables?by=customer&limit=100"); err != nil {
		return r, err
	}
	if r.listFirst, err = c.time(o.n, "/v1/invoices?overdue=true&limit=100"); err != nil {
		return r, err
	}
	deep, pages, err := c.cursorAt(o.deep)
	if err != nil {
		return r, err
	}
	r.pages = pages
	r.listDeep, err = c.time(o.n, "/v1/invoices?overdue=true&limit=100&cursor="+url.QueryEscape(deep))
	return r, err
}

// serve runs the whole service on a local port, in Europe/Berlin, and
// returns its base URL and a clerk's token.
func serve(ctx context.Context, pool *pgxpool.Pool) (string, string, func(), error) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		return "", "", nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(ctx, app.Config{Invoices: invoices.Config{BusinessTimeZone: berlin}}, pool, log)
	if err != nil {
		return "", "", nil, err
	}
	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	a.Routes(e)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		return "", "", nil, err
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() { _ = srv.Close(); a.Close() }
	u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: "bench-clerk", Role: identity.RoleClerk})
	if err != nil {
		stop()
		return "", "", nil, err
	}
	tok, err := identity.TokenCreate(ctx, pool, u.ID, "bench")
	if err != nil {
		stop()
		return "", "", nil, err
	}
	return "http://" + ln.Addr().String(), tok, stop, nil
}

type client struct{ base, token string }

func (c *client) get(path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body, err
}

// time gets path n times after 3 untimed requests and returns the median
// and the 95th percentile in milliseconds.
func (c *client) time(n int, path string) ([2]float64, error) {
	var ms []float64
	for i := range n + 3 {
		start := time.Now()
		if _, err := c.get(path); err != nil {
			return [2]float64{}, err
		}
		if i >= 3 {
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		}
	}
	slices.Sort(ms)
	return [2]float64{ms[len(ms)/2], ms[len(ms)*95/100]}, nil
}

// cursorAt follows the overdue list to page want (or its last) and
// returns the cursor that reaches it and its number.
func (c *client) cursorAt(want int) (string, int, error) {
	cursor := ""
	for page := 1; page < want; page++ {
		path := "/v1/invoices?overdue=true&limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		body, err := c.get(path)
		if err != nil {
			return "", 0, err
		}
		var p struct {
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return "", 0, err
		}
		if p.NextCursor == nil {
			return cursor, page, nil
		}
		cursor = *p.NextCursor
	}
	return cursor, want, nil
}

func print(rs []result) {
	fmt.Println("invoices   open     overdue  | report p50/p95 ms | by customer p50/p95 | overdue list p1 p50/p95 | page N p50/p95")
	for _, r := range rs {
		fmt.Printf("%-10d %-8d %-8d | %7.1f / %-7.1f | %7.1f / %-9.1f | %9.1f / %-11.1f | p%d %5.1f / %.1f\n",
			r.size, r.open, r.overdue, r.report[0], r.report[1], r.byCustomer[0], r.byCustomer[1],
			r.listFirst[0], r.listFirst[1], r.pages, r.listDeep[0], r.listDeep[1])
	}
	if len(rs) < 2 {
		return
	}
	small, big := rs[0], rs[len(rs)-1]
	fmt.Printf("overdue list, %d vs %d invoices: first page %.2f×, page %d %.2f× (target ≤ 2×)\n",
		big.size, small.size, big.listFirst[0]/small.listFirst[0], big.pages, big.listDeep[0]/small.listDeep[0])
	fmt.Printf("report at %d invoices: %.1f ms median, %.1f ms p95 (target ≤ 300 ms)\n", big.size, big.report[0], big.report[1])
}
