// Command bench-mcp is `make bench-mcp`: the same read capability
// (get-customer, one primary-key lookup) called over MCP (tools/call on
// /mcp, one session per worker) with an API token and with an OAuth
// access token (ADR-0023), and over REST (POST
// /v1/capabilities/get-customer/invoke), closed-loop at concurrency 1, 8
// and 32 against one `invoiced serve`. It prints calls/s, p50/p99 and the
// server's CPU per call of each, the ratios MCP/REST and OAuth/MCP, and
// then the token endpoint's issue rate (refresh_token grants, each
// issuing an access and a refresh token). It is a command, not a test:
// targets are read off its output, never asserted.
//
// Both clients are raw HTTP loops that send pre-encoded bodies and read
// the whole answer, so the load generator costs each side about the same;
// the two sides alternate in rounds and each figure is the median of its
// rounds, since this shared two-core machine drifts within a minute.
//
// Settings: INVOICED_TEST_DATABASE_URL (a server whose user may CREATE
// DATABASE), BENCH_DURATION (per level, side and round, default 5s),
// BENCH_ROUNDS (default 3), BENCH_LEVELS (default "1,8,32").
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/internal/benchkit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-mcp:", err)
		os.Exit(1)
	}
}

type settings struct {
	dur    time.Duration
	rounds int
	levels []int
}

func readSettings() (settings, error) {
	s := settings{dur: 5 * time.Second, rounds: 3, levels: []int{1, 8, 32}}
	if v := os.Getenv("BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return s, fmt.Errorf("BENCH_DURATION: %w", err)
		}
		s.dur = d
	}
	if v := os.Getenv("BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("BENCH_ROUNDS: %q is not a positive integer", v)
		}
		s.rounds = n
	}
	if v := os.Getenv("BENCH_LEVELS"); v != "" {
		s.levels = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return s, fmt.Errorf("BENCH_LEVELS: %q is not a positive integer", f)
			}
			s.levels = append(s.levels, n)
		}
	}
	return s, nil
}

func run() error {
	ctx := context.Background()
	admin := os.Getenv("INVOICED_TEST_DATABASE_URL")
	if admin == "" {
		return errors.New("set INVOICED_TEST_DATABASE_URL to a PostgreSQL URL whose user may CREATE DATABASE")
	}
	set, err := readSettings()
	if err != nil {
		return err
	}
	srv, err := startServer(ctx, admin)
	if err != nil {
		return err
	}
	defer srv.stop()
	// One grant per worker at the highest level for each OAuth side,
	// approved through the consent page before any round.
	most := slices.Max(set.levels)
	oc, err := newOAuthClient(ctx, srv, srv.dbURL)
	if err != nil {
		return err
	}
	grants, err := oc.grants(2 * most)
	if err != nil {
		return err
	}
	sides := []side{restSide(srv), {name: "MCP", newWorker: mcpSide(srv).withToken(srv.token)}, mcpOAuthSide(srv, grants[:most])}
	for _, s := range sides {
		if _, err := load(s, 8, time.Second); err != nil {
			return fmt.Errorf("%s: warm-up: %w", s.name, err)
		}
	}
	results := make([][]result, len(sides))
	for _, c := range set.levels {
		runs := make([][]result, len(sides))
		for r := 0; r < set.rounds; r++ {
			for k := range sides {
				i := k
				if r%2 == 1 {
					i = len(sides) - 1 - k
				}
				res, err := measure(sides[i], srv.pid, c, set.dur)
				if err != nil {
					return fmt.Errorf("%s: %w", sides[i].name, err)
				}
				runs[i] = append(runs[i], res)
			}
		}
		for i := range sides {
			results[i] = append(results[i], median(runs[i]))
		}
	}
	tokens := tokenSide(oc, grants[most:])
	var issued []result
	for _, c := range set.levels {
		var runs []result
		for r := 0; r < set.rounds; r++ {
			res, err := measure(tokens, srv.pid, c, set.dur)
			if err != nil {
				return fmt.Errorf("token: %w", err)
			}
			runs = append(runs, res)
		}
		issued = append(issued, median(runs))
	}
	report(set, sides, results, issued)
	return nil
}

func report(set settings, sides []side, results [][]result, issued []result) {
	fmt.Printf("bench-mcp: get-customer over REST (POST /v1/capabilities/get-customer/invoke) and MCP (tools/call)\n"+
		"with an API token (MCP) and an OAuth access token (OAuth); each figure the median of %d alternating\n"+
		"rounds of %s per level and side\n\n", set.rounds, set.dur)
	row := func(name string, r result) {
		rounds := make([]string, len(r.rounds))
		for k, v := range r.rounds {
			rounds[k] = strconv.Itoa(int(v))
		}
		fmt.Printf("%-5s %5d %10.0f %10s %10s %7d %14s   %s\n", name, r.conc, r.rps,
			r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.errors,
			r.cpuServer.Round(time.Microsecond), strings.Join(rounds, " "))
	}
	fmt.Printf("%-5s %5s %10s %10s %10s %7s %14s   %s\n", "side", "conc", "calls/s", "p50", "p99", "errors", "server CPU/call", "calls/s of each round")
	rest, mcp, oauth := results[0], results[1], results[2]
	for i := range rest {
		for k, s := range sides {
			row(s.name, results[k][i])
		}
	}
	fmt.Println()
	for i := range rest {
		fmt.Printf("concurrency %2d: MCP/REST calls/s %.0f %%, p99 %s vs %s; OAuth/MCP calls/s %.1f %%, CPU/call %s vs %s\n",
			rest[i].conc, 100*mcp[i].rps/rest[i].rps, mcp[i].p99.Round(10*time.Microsecond), rest[i].p99.Round(10*time.Microsecond),
			100*oauth[i].rps/mcp[i].rps, oauth[i].cpuServer.Round(time.Microsecond), mcp[i].cpuServer.Round(time.Microsecond))
	}
	fmt.Printf("\ntoken endpoint (refresh_token grant: an access and a refresh token issued, the old one used up)\n")
	fmt.Printf("%-5s %5s %10s %10s %10s %7s %14s   %s\n", "", "conc", "issues/s", "p50", "p99", "errors", "server CPU/issue", "issues/s of each round")
	for _, r := range issued {
		row("token", r)
	}
}

// server is a running `invoiced serve` over a fresh database.
type server struct {
	base, token string
	dbURL       string
	customerID  uuid.UUID
	pid         int
	stop        func()
}

func startServer(ctx context.Context, admin string) (*server, error) {
	tmp, err := os.MkdirTemp("", "bench-mcp")
	if err != nil {
		return nil, err
	}
	dbName := "invoiced_bench_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	dbURL, err := benchkit.CreateDB(ctx, admin, dbName)
	cleanup := func() { benchkit.DropDB(context.Background(), admin, dbName); os.RemoveAll(tmp) }
	if err != nil {
		cleanup()
		return nil, err
	}
	s, err := serve(ctx, tmp, dbURL)
	if err != nil {
		cleanup()
		return nil, err
	}
	s.dbURL = dbURL
	stopServe := s.stop
	s.stop = func() { stopServe(); cleanup() }
	return s, nil
}

// serve builds the binary, makes a clerk and a customer, and starts it.
func serve(ctx context.Context, tmp, dbURL string) (*server, error) {
	bin := filepath.Join(tmp, "invoiced")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/invoiced").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build: %v: %s", err, out)
	}
	cmd := exec.Command(bin, "users", "create", "--username", "bench", "--role", "clerk")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("create user: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	s := &server{token: lines[len(lines)-1], customerID: uuid.New()}
	if err := benchkit.SeedCustomer(ctx, dbURL, s.customerID); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	srv := exec.Command(bin, "serve")
	srv.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "INVOICED_ADDR="+addr, "INVOICED_LOG_LEVEL=warn")
	srv.Stdout, srv.Stderr = io.Discard, os.Stderr
	if err := srv.Start(); err != nil {
		return nil, err
	}
	s.pid, s.base = srv.Process.Pid, "http://"+addr
	s.stop = func() { _ = srv.Process.Kill(); _, _ = srv.Process.Wait() }
	for i := 0; ; i++ {
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if i == 200 {
			s.stop()
			return nil, errors.New("the server never became ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// median is each figure's median over rs (the upper one of an even
// count), errors summed.
func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	d := func(f func(result) time.Duration) time.Duration {
		return time.Duration(pick(func(r result) float64 { return float64(f(r)) }))
	}
	out := result{conc: rs[0].conc}
	out.rps = pick(func(r result) float64 { return r.rps })
	out.p50 = d(func(r result) time.Duration { return r.p50 })
	out.p99 = d(func(r result) time.Duration { return r.p99 })
	out.cpuServer = d(func(r result) time.Duration { return r.cpuServer })
	for _, r := range rs {
		out.rounds = append(out.rounds, r.rps)
		out.errors += r.errors
	}
	return out
}
