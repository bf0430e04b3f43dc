// Command benchchat is `make bench-chat`: closed-loop load on POST /v1/chat
// with the scripted model at zero latency (each request one read tool call,
// a primary-key lookup, then a short text), at concurrency 1, 8 and 32; and
// the same load on the peer in bench/peer (ai@7 streamText with its mock
// model and the same query). It prints requests/s, p50/p99 latency and peak
// RSS of each server, and the ratios. It is a command, not a test: timing
// targets are read off its output, never asserted.
//
// Settings: INVOICED_TEST_DATABASE_URL (a server whose user may CREATE
// DATABASE), BENCH_DURATION (per level, default 5s).
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
	RPS         float64
	P50, P99    time.Duration
	Errors      int64
	PeakRSSKiB  int64
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
	ours, err := measure(base+"/v1/chat", token, srv.Process.Pid, dur)
	if err != nil {
		return fmt.Errorf("invoiced: %w", err)
	}

	peerDir := filepath.Join(root, "bench", "peer")
	if _, err := os.Stat(filepath.Join(peerDir, "node_modules", "ai")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = peerDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci in bench/peer: %v: %s", err, out)
		}
	}
	pport, err := freePort()
	if err != nil {
		return err
	}
	peer := exec.Command("node", "server.mjs")
	peer.Dir = peerDir
	peer.Env = append(os.Environ(), "PORT="+pport, "DATABASE_URL="+dbURL, "BENCH_CUSTOMER_ID="+customerID.String())
	peer.Stdout, peer.Stderr = io.Discard, os.Stderr
	if err := peer.Start(); err != nil {
		return err
	}
	defer func() { _ = peer.Process.Kill(); _, _ = peer.Process.Wait() }()
	pbase := "http://127.0.0.1:" + pport
	if err := waitReady(pbase+"/", 404); err != nil {
		return err
	}
	theirs, err := measure(pbase+"/api/chat", "", peer.Process.Pid, dur)
	if err != nil {
		return fmt.Errorf("peer: %w", err)
	}

	fmt.Printf("bench-chat: %s per level, scripted model at zero latency, one get-customer call + text per request\n\n", dur)
	fmt.Printf("%-9s %5s %10s %10s %10s %7s %12s\n", "server", "conc", "req/s", "p50", "p99", "errors", "peak RSS")
	for i := range ours {
		for _, r := range []struct {
			name string
			res  result
		}{{"invoiced", ours[i]}, {"peer", theirs[i]}} {
			fmt.Printf("%-9s %5d %10.0f %10s %10s %7d %9.1f MiB\n", r.name, r.res.Concurrency, r.res.RPS,
				r.res.P50.Round(10*time.Microsecond), r.res.P99.Round(10*time.Microsecond), r.res.Errors, float64(r.res.PeakRSSKiB)/1024)
		}
	}
	fmt.Println()
	for i := range ours {
		fmt.Printf("concurrency %2d: invoiced/peer requests/s %.2fx, p99 %s vs %s, peak RSS %.2fx of the peer's\n",
			ours[i].Concurrency, ours[i].RPS/theirs[i].RPS, ours[i].P99.Round(10*time.Microsecond), theirs[i].P99.Round(10*time.Microsecond),
			float64(ours[i].PeakRSSKiB)/float64(theirs[i].PeakRSSKiB))
	}
	return nil
}

// measure runs closed-loop load at 1, 8 and 32 after a warm-up.
func measure(endpoint, token string, pid int, dur time.Duration) ([]result, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128}, Timeout: 30 * time.Second}
	if _, err := load(client, endpoint, token, 8, time.Second); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	var out []result
	for _, c := range []int{1, 8, 32} {
		resetPeakRSS(pid)
		r, err := load(client, endpoint, token, c, dur)
		if err != nil {
			return nil, err
		}
		r.PeakRSSKiB = peakRSS(pid)
		out = append(out, r)
	}
	return out, nil
}

func load(client *http.Client, endpoint, token string, conc int, dur time.Duration) (result, error) {
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
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := oneChat(client, endpoint, token); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
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
	return result{Concurrency: conc, RPS: float64(len(lat)) / elapsed.Seconds(), P50: pct(0.50), P99: pct(0.99), Errors: errs.Load()}, nil
}

// oneChat is one new conversation: a user message, read to [DONE]; it
// fails unless the tool's output and the text arrived.
func oneChat(client *http.Client, endpoint, token string) error {
	body := fmt.Sprintf(`{"id":%q,"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"look up the customer"}]}],"trigger":"submit-message"}`,
		strings.ReplaceAll(uuid.NewString(), "-", ""))
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
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
