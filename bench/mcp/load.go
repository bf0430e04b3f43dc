package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/invoiced/invoiced/internal/benchkit"
)

type result struct {
	conc      int
	elapsed   time.Duration
	rps       float64
	p50, p99  time.Duration
	errors    int64
	cpuServer time.Duration
	rounds    []float64
}

// side is one way of making the call: newWorker opens what a worker
// keeps (an MCP session) and returns its call.
type side struct {
	name      string
	newWorker func(c *http.Client) (func() error, error)
}

func post(c *http.Client, url, token, session string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return c.Do(req)
}

// exchange posts body and reads the whole answer, which must be 200 and
// contain want.
func exchange(c *http.Client, url, token, session string, body []byte, want string) error {
	resp, err := post(c, url, token, session, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(want)) || bytes.Contains(b, []byte(`"isError":true`)) {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	return nil
}

func restSide(s *server) side {
	body := []byte(`{"input":{"customer_id":"` + s.customerID.String() + `"}}`)
	url := s.base + "/v1/capabilities/get-customer/invoke"
	return side{name: "REST", newWorker: func(c *http.Client) (func() error, error) {
		return func() error { return exchange(c, url, s.token, "", body, `"Bench GmbH"`) }, nil
	}}
}

// mcpCall is tools/call of get-customer on /mcp, as some token.
type mcpCall struct {
	url  string
	body []byte
}

func mcpSide(s *server) mcpCall {
	return mcpCall{url: s.base + "/mcp",
		body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-customer","arguments":{"customer_id":"` + s.customerID.String() + `"}}}`)}
}

// withToken is a worker of the call in its own session of token.
func (m mcpCall) withToken(token string) func(c *http.Client) (func() error, error) {
	return func(c *http.Client) (func() error, error) {
		session, err := initialize(c, m.url, token)
		if err != nil {
			return nil, err
		}
		return func() error { return exchange(c, m.url, token, session, m.body, `"Bench GmbH"`) }, nil
	}
}

// initialize opens an MCP session and returns its id.
func initialize(c *http.Client, url, token string) (string, error) {
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(init))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		return "", fmt.Errorf("initialize: status %d", resp.StatusCode)
	}
	resp, err = post(c, url, token, session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return session, nil
}

// load runs conc workers in a closed loop for dur.
func load(s side, conc int, dur time.Duration) (result, error) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	calls := make([]func() error, conc)
	for i := range calls {
		var err error
		if calls[i], err = s.newWorker(c); err != nil {
			return result{}, err
		}
	}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		errs  int64
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(dur)
	for _, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				err := call()
				mine = append(mine, time.Since(t0))
				if err != nil {
					mu.Lock()
					errs++
					first = errors.Join(first, err)
					mu.Unlock()
				}
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if errs > 0 && errs == int64(len(lats)) {
		return result{}, first
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	pct := func(p float64) time.Duration { return lats[min(len(lats)-1, int(p*float64(len(lats))))] }
	return result{conc: conc, elapsed: elapsed, rps: float64(len(lats)) / elapsed.Seconds(), p50: pct(0.50), p99: pct(0.99), errors: errs}, nil
}

// measure is load with the server's CPU per call.
func measure(s side, pid, conc int, dur time.Duration) (result, error) {
	cpu0 := benchkit.CPUTime(pid)
	r, err := load(s, conc, dur)
	if err != nil {
		return r, err
	}
	if n := time.Duration(r.rps * r.elapsed.Seconds()); n > 0 {
		r.cpuServer = (benchkit.CPUTime(pid) - cpu0) / n
	}
	return r, nil
}
