package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/webhooks"
)

// receiver is the local webhook receiver: it records when the
// invoice.issued delivery of each invoice first arrived and answers 204.
type receiver struct {
	url     string
	mu      sync.Mutex
	arrived map[uuid.UUID]time.Time
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hooks", arrived: map[uuid.UUID]time.Time{}}
	go func() { _ = http.Serve(ln, r) }() //nolint:gosec // a local benchmark receiver
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(req.Body)
	var env struct {
		Type string `json:"type"`
		Data struct {
			ID uuid.UUID `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &env) == nil && env.Type == "invoice.issued" {
		r.mu.Lock()
		if _, seen := r.arrived[env.Data.ID]; !seen {
			r.arrived[env.Data.ID] = at
		}
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// wait returns the arrival time of each invoice's delivery once all have
// arrived.
func (r *receiver) wait(ids []uuid.UUID, timeout time.Duration) ([]time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		out := make([]time.Time, 0, len(ids))
		for _, id := range ids {
			if at, ok := r.arrived[id]; ok {
				out = append(out, at)
			}
		}
		r.mu.Unlock()
		if len(out) == len(ids) {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d invoice.issued deliveries after %s", len(out), len(ids), timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// subscribe adds, as admin, an endpoint for invoice.issued pointing at
// the receiver.
func (b *bench) subscribe(ctx context.Context, admin identity.Principal) error {
	emit, err := app.NewEmitter(nil)
	if err != nil {
		return err
	}
	svc := webhooks.NewService(b.pool, emit, webhooks.Config{AllowPrivate: true})
	_, err = svc.Add(ctx, admin, capability.PathCLI, b.recv.url, []string{"invoice.issued"})
	return err
}

// deliveries is what one round's deliveries measured.
type deliveries struct {
	perSecond float64
	latencies []time.Duration // commit (the 200) → arrival
}

// measureDeliveries waits for the deliveries of a round whose issues
// answered 200 at committed (by invoice), started at start.
func (b *bench) measureDeliveries(start time.Time, ids []uuid.UUID, committed []time.Time) (deliveries, error) {
	arrived, err := b.recv.wait(ids, 2*time.Minute)
	if err != nil {
		return deliveries{}, err
	}
	d := deliveries{latencies: make([]time.Duration, len(ids))}
	last := start
	for i, at := range arrived {
		d.latencies[i] = at.Sub(committed[i])
		if at.After(last) {
			last = at
		}
	}
	d.perSecond = float64(len(ids)) / last.Sub(start).Seconds()
	return d, nil
}

// p99 is the 99th percentile (nearest rank).
func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// drain waits until the jobs prepare's events caused (approval requested
// and decided: a mail job each) are worked, so that a timed round shares
// the machine with its own background work only.
func (b *bench) drain(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM river_job
			WHERE queue = ANY($1) AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`,
			[]string{outbox.QueueEvents, outbox.QueueWebhooks, outbox.QueueMail}).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d jobs still waiting after 2 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
