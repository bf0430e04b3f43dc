// Command benchchat is `make bench-chat`: closed-loop load on POST /v1/chat
// with the scripted model at zero latency (each request one read tool call,
// a primary-key lookup, then a short text), at concurrency 1, 8 and 32; and
// the same load on the peer in bench/peer (ai@7 streamText with its mock
// model and the same query). It prints requests/s, p50/p99 latency and peak
// RSS of each server, and the ratios. It is a command, not a test: timing
// targets are read off its output, never asserted.
//
// Settings: INVOICED_TEST_DATABASE_URL (a server whose user may CREATE
// DATABASE), BENCH_DURATION (per level, side and round, default 5s),
// BENCH_ROUNDS (default 3), BENCH_LEVELS (concurrency levels, default
// "1,8,32"), BENCH_PEER=off (measure invoiced alone, while working on it).
//
// Both servers run for the whole benchmark and are measured in alternating
// rounds at each level (ours then the peer's, then the other way round),
// and each figure is the median of its rounds: on a shared two-core
// machine whose speed drifts by tens of percent within a minute, measuring
// one side after the other would compare two different machines.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-chat:", err)
		os.Exit(1)
	}
}

type result struct {
	Concurrency int
	Elapsed     time.Duration
	RPS         float64
	P50, P99    time.Duration
	Errors      int64
	PeakRSSKiB  int64
	// CPU per request of the server, of every local PostgreSQL process
	// and of this load generator: where the two cores go.
	CPUServer, CPUPostgres, CPULoad time.Duration
	// Rounds are the requests/s of each round a median was taken over.
	Rounds []float64
}

func run() error {
	ctx := context.Background()
	admin := os.Getenv("INVOICED_TEST_DATABASE_URL")
	if admin == "" {
		return errors.New("set INVOICED_TEST_DATABASE_URL to a PostgreSQL URL whose user may CREATE DATABASE")
	}
	dur := 5 * time.Second
	if v := os.Getenv("BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("BENCH_DURATION: %w", err)
		}
		dur = d
	}
	levels := []int{1, 8, 32}
	if v := os.Getenv("BENCH_LEVELS"); v != "" {
		levels = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("BENCH_LEVELS: %q is not a positive integer", f)
			}
			levels = append(levels, n)
		}
	}
	rounds := 3
	if v := os.Getenv("BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("BENCH_ROUNDS: %q is not a positive integer", v)
		}
		rounds = n
	}
	withPeer := true
	switch os.Getenv("BENCH_PEER") {
	case "", "on":
	case "off":
		withPeer = false
	default:
		return errors.New("BENCH_PEER: must be on or off")
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-chat")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	dbName := "invoiced_bench_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	dbURL, err := createDB(ctx, admin, dbName)
	if err != nil {
		return err
	}
	defer dropDB(context.Background(), admin, dbName)

	bin := filepath.Join(tmp, "invoiced")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/invoiced").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v: %s", err, out)
	}
	out, err := runEnv(bin, []string{"DATABASE_URL=" + dbURL}, "users", "create", "--username", "bench", "--role", "clerk")
	if err != nil {
		return fmt.Errorf("create user: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]

	// The customer the tool looks up; the script is written once its id
	// is known, so the server starts after it exists.
	customerID := uuid.New()
	if err := seedCustomer(ctx, dbURL, customerID); err != nil {
		return err
	}
	scriptPath := filepath.Join(tmp, "script.json")
	script := fmt.Sprintf(`{"default":[{"tool_calls":[{"name":"get-customer","input":{"customer_id":%q}}]},{"text":"Found it."}]}`, customerID)
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		return err
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	srv := exec.Command(bin, "serve")
	srv.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "INVOICED_ADDR=127.0.0.1:"+port,
		"INVOICED_MODEL_PROVIDER=scripted", "INVOICED_MODEL_SCRIPT="+scriptPath, "INVOICED_LOG_LEVEL=warn")
	srv.Stdout, srv.Stderr = io.Discard, os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Kill(); _, _ = srv.Process.Wait() }()
	base := "http://127.0.0.1:" + port
	if err := waitReady(base+"/readyz", 200); err != nil {
		return err
	}
	targets := []target{{name: "invoiced", endpoint: base + "/v1/chat", token: token, pid: srv.Process.Pid}}
	if withPeer {
		peer, stop, err := startPeer(root, dbURL, customerID)
		if err != nil {
			return err
		}
		defer stop()
		targets = append(targets, peer)
	}
	for _, t := range targets {
		if _, err := load(t.endpoint, t.token, 8, time.Second); err != nil {
			return fmt.Errorf("%s: warm-up: %w", t.name, err)
		}
	}
	byTarget := make([][]result, len(targets))
	for _, c := range levels {
		runs := make([][]result, len(targets))
		for r := 0; r < rounds; r++ {
			for k := range targets {
				i := k
				if r%2 == 1 {
					i = len(targets) - 1 - k
				}
				res, err := measureOne(targets[i], c, dur)
				if err != nil {
					return fmt.Errorf("%s: %w", targets[i].name, err)
				}
				runs[i] = append(runs[i], res)
			}
		}
		for i := range targets {
			byTarget[i] = append(byTarget[i], median(runs[i]))
		}
	}
	ours := byTarget[0]
	var theirs []result
	if withPeer {
		theirs = byTarget[1]
	}

	fmt.Printf("bench-chat: scripted model at zero latency, one get-customer call + text per request;\n"+
		"each figure the median of %d alternating rounds of %s per level and server (peak RSS: the highest)\n\n", rounds, dur)
	fmt.Printf("%-9s %5s %10s %10s %10s %7s %12s   %s\n", "server", "conc", "req/s", "p50", "p99", "errors", "peak RSS", "CPU per request: server / postgres / load   req/s of each round")
	for i := range ours {
		for _, r := range []struct {
			name string
			res  result
		}{{"invoiced", ours[i]}, {"peer", at(theirs, i)}} {
			if r.res.Concurrency == 0 {
				continue
			}
			rounds := make([]string, len(r.res.Rounds))
			for i, v := range r.res.Rounds {
				rounds[i] = strconv.Itoa(int(v))
			}
			fmt.Printf("%-9s %5d %10.0f %10s %10s %7d %9.1f MiB   %s / %s / %s   %s\n", r.name, r.res.Concurrency, r.res.RPS,
				r.res.P50.Round(10*time.Microsecond), r.res.P99.Round(10*time.Microsecond), r.res.Errors, float64(r.res.PeakRSSKiB)/1024,
				r.res.CPUServer.Round(time.Microsecond), r.res.CPUPostgres.Round(time.Microsecond), r.res.CPULoad.Round(time.Microsecond),
				strings.Join(rounds, " "))
		}
	}
	fmt.Println()
	for i := range theirs {
		fmt.Printf("concurrency %2d: invoiced/peer requests/s %.2fx, p99 %s vs %s, peak RSS %.2fx of the peer's\n",
			ours[i].Concurrency, ours[i].RPS/theirs[i].RPS, ours[i].P99.Round(10*time.Microsecond), theirs[i].P99.Round(10*time.Microsecond),
			float64(ours[i].PeakRSSKiB)/float64(theirs[i].PeakRSSKiB))
	}
	return nil
}

func at(rs []result, i int) result {
	if i < len(rs) {
		return rs[i]
	}
	return result{}
}

// target is a server under load.
type target struct {
	name, endpoint, token string
	pid                   int
}

// startPeer starts bench/peer (installing its pinned packages on first
// use); stop ends it.
func startPeer(root, dbURL string, customerID uuid.UUID) (target, func(), error) {
	peerDir := filepath.Join(root, "bench", "peer")
	if _, err := os.Stat(filepath.Join(peerDir, "node_modules", "ai")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = peerDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return target{}, nil, fmt.Errorf("npm ci in bench/peer: %v: %s", err, out)
		}
	}
	pport, err := freePort()
	if err != nil {
		return target{}, nil, err
	}
	peer := exec.Command("node", "server.mjs")
	peer.Dir = peerDir
	peer.Env = append(os.Environ(), "PORT="+pport, "DATABASE_URL="+dbURL, "BENCH_CUSTOMER_ID="+customerID.String())
	peer.Stdout, peer.Stderr = io.Discard, os.Stderr
	if err := peer.Start(); err != nil {
		return target{}, nil, err
	}
	stop := func() { _ = peer.Process.Kill(); _, _ = peer.Process.Wait() }
	pbase := "http://127.0.0.1:" + pport
	if err := waitReady(pbase+"/", 404); err != nil {
		stop()
		return target{}, nil, err
	}
	return target{name: "peer", endpoint: pbase + "/api/chat", pid: peer.Process.Pid}, stop, nil
}

// measureOne runs closed-loop load at concurrency c on t for dur, with
// t's peak RSS and the CPU each process spent per request.
func measureOne(t target, c int, dur time.Duration) (result, error) {
	resetPeakRSS(t.pid)
	srv0, pg0, self0 := cpuTime(t.pid), postgresCPU(), cpuTime(os.Getpid())
	r, err := load(t.endpoint, t.token, c, dur)
	if err != nil {
		return r, err
	}
	r.PeakRSSKiB = peakRSS(t.pid)
	if n := time.Duration(r.RPS * r.Elapsed.Seconds()); n > 0 {
		r.CPUServer = (cpuTime(t.pid) - srv0) / n
		r.CPUPostgres = (postgresCPU() - pg0) / n
		r.CPULoad = (cpuTime(os.Getpid()) - self0) / n
	}
	return r, nil
}

// median is each figure's median over rs (the upper one of an even
// count), errors summed and peak RSS the highest.
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
	out := result{Concurrency: rs[0].Concurrency}
	out.RPS = pick(func(r result) float64 { return r.RPS })
	out.P50 = d(func(r result) time.Duration { return r.P50 })
	out.P99 = d(func(r result) time.Duration { return r.P99 })
	out.CPUServer = d(func(r result) time.Duration { return r.CPUServer })
	out.CPUPostgres = d(func(r result) time.Duration { return r.CPUPostgres })
	out.CPULoad = d(func(r result) time.Duration { return r.CPULoad })
	for _, r := range rs {
		out.Rounds = append(out.Rounds, r.RPS)
		out.Errors += r.Errors
		out.PeakRSSKiB = max(out.PeakRSSKiB, r.PeakRSSKiB)
	}
	return out
}

func load(endpoint, token string, conc int, dur time.Duration) (result, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return result{}, err
	}
	var (
		mu       sync.Mutex
		lat      []time.Duration
		errs     atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(dur)
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &chatClient{addr: u.Host, path: u.RequestURI(), token: token}
			defer c.close()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := c.chat(); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					c.close()
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(lat) == 0 {
		return result{}, fmt.Errorf("no request succeeded: %v", firstErr.Load())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return result{Concurrency: conc, Elapsed: elapsed, RPS: float64(len(lat)) / elapsed.Seconds(), P50: pct(0.50), P99: pct(0.99), Errors: errs.Load()}, nil
}

// chatClient is one closed-loop client on one kept-alive connection. It
// writes the request itself and parses the response with net/http's
// ReadResponse: like wrk, it spends as little of the machine's two cores
// as it can, since every cycle it takes is one neither server gets
// (http.Client's per-connection goroutines cost about 0.25 ms of CPU per
// chat here). Both servers are measured with it.
type chatClient struct {
	addr, path, token string
	conn              net.Conn
	br                *bufio.Reader
	buf               []byte
}

func (c *chatClient) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// chat is one new conversation: a user message, read to [DONE]; it fails
// unless the tool's output and the text arrived.
func (c *chatClient) chat() error {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return err
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	body := fmt.Sprintf(`{"id":%q,"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"look up the customer"}]}],"trigger":"submit-message"}`,
		strings.ReplaceAll(uuid.NewString(), "-", ""))
	c.buf = fmt.Appendf(c.buf[:0], "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", c.path, c.addr, len(body))
	if c.token != "" {
		c.buf = fmt.Appendf(c.buf, "Authorization: Bearer %s\r\n", c.token)
	}
	c.buf = append(append(c.buf, "\r\n"...), body...)
	_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.conn.Write(c.buf); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.Close {
		c.close()
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	if !bytes.Contains(raw, []byte(`"tool-output-available"`)) || !bytes.Contains(raw, []byte("it.")) || !bytes.HasSuffix(bytes.TrimSpace(raw), []byte("data: [DONE]")) {
		return fmt.Errorf("incomplete stream: %s", raw)
	}
	return nil
}

// resetPeakRSS clears the kernel's high-water mark (Linux ≥ 4.0) so each
// level reports its own peak; where that fails the peak is cumulative.
func resetPeakRSS(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime is a process's user+system CPU so far (/proc/PID/stat fields 14
// and 15, in clock ticks of 10 ms on Linux).
func cpuTime(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields count from after its ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// postgresCPU sums cpuTime over every process named postgres: the
// backends serving the benchmark, the WAL writer and the checkpointer.
// With a remote database it is zero.
func postgresCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			total += cpuTime(pid)
		}
	}
	return total
}

func waitReady(u string, want int) error {
	for i := 0; i < 200; i++ {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s never answered %d", u, want)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

func runEnv(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

func withDatabase(admin, name string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func createDB(ctx context.Context, admin, name string) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	dbURL, err := withDatabase(admin, name)
	if err != nil {
		return "", err
	}
	db, err := migrations.Open(dbURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		return "", err
	}
	if _, err := p.Up(ctx); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	return dbURL, nil
}

func dropDB(ctx context.Context, admin, name string) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func seedCustomer(ctx context.Context, dbURL string, id uuid.UUID) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO customers (id, name, email, currency, created_at, updated_at) VALUES ($1, 'Bench GmbH', 'ap@bench.example', 'EUR', now(), now())`, id)
	if err != nil {
		return fmt.Errorf("seed customer: %w", err)
	}
	return nil
}
