package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/internal/benchkit"
)

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
	// Rounds are the requests/s of each round a median was taken over,
	// RoundsP99 their p99: on this machine a round's tail moves more than
	// its rate, and a median hides by how much.
	Rounds    []float64
	RoundsP99 []time.Duration
}

// bodies gives worker w's next request body; false when it has none left.
type bodies func(w int) (string, bool)

// newChats is bench-chat's load: every request a new conversation, its
// user message in the whole list (the body every peer reads).
func newChats(int) (string, bool) {
	return fmt.Sprintf(`{"id":%q,"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"look up the customer"}]}],"trigger":"submit-message"}`,
		strings.ReplaceAll(uuid.NewString(), "-", "")), true
}

// measureOne runs closed-loop load at concurrency c on t for dur, with
// t's peak RSS and the CPU each process spent per request.
func measureOne(t target, c int, dur time.Duration) (result, error) {
	return measureWith(t, c, dur, newChats)
}

// measureWith is measureOne with the bodies next gives.
func measureWith(t target, c int, dur time.Duration, next bodies) (result, error) {
	resetPeakRSS(t.pid)
	srv0, pg0, self0 := benchkit.CPUTime(t.pid), benchkit.PostgresCPU(), benchkit.CPUTime(os.Getpid())
	r, err := loadWith(t, c, dur, next)
	if err != nil {
		return r, err
	}
	r.PeakRSSKiB = peakRSS(t.pid)
	if n := time.Duration(r.RPS * r.Elapsed.Seconds()); n > 0 {
		r.CPUServer = (benchkit.CPUTime(t.pid) - srv0) / n
		r.CPUPostgres = (benchkit.PostgresCPU() - pg0) / n
		r.CPULoad = (benchkit.CPUTime(os.Getpid()) - self0) / n
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
		out.RoundsP99 = append(out.RoundsP99, r.P99)
		out.Errors += r.Errors
		out.PeakRSSKiB = max(out.PeakRSSKiB, r.PeakRSSKiB)
	}
	return out
}

func load(t target, conc int, dur time.Duration) (result, error) {
	return loadWith(t, conc, dur, newChats)
}

// loadWith runs conc closed-loop clients on t until dur has passed or
// next has no more bodies for them.
func loadWith(t target, conc int, dur time.Duration, next bodies) (result, error) {
	u, err := url.Parse(t.endpoint)
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
			c := &chatClient{addr: u.Host, path: u.RequestURI(), token: t.token}
			defer c.close()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				body, ok := next(w)
				if !ok {
					break
				}
				t0 := time.Now()
				if err := c.chat(body); err != nil {
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
// chat here). Every server is measured with it.
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

// chat posts body and reads the answer to [DONE]; it fails unless the
// tool's output and the text arrived.
func (c *chatClient) chat(body string) error {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return err
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
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
