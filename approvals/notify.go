package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Channel is the LISTEN/NOTIFY channel of approval status changes.
const Channel = "invoiced_approvals"

// Change is one announced change of a request. Resync changes carry no id:
// the hub lost its connection and may have missed changes, so every
// subscriber re-reads what it watches.
type Change struct {
	ID      uuid.UUID `json:"id"`
	Status  Status    `json:"status"`
	Version int64     `json:"version"`
	Resync  bool      `json:"-"`
}

// subscriberBuffer is how many changes a slow subscriber may lag before it
// is dropped: 256 covers a burst of decisions while an SSE client's TCP
// window is full; a dropped subscriber sees its channel closed.
const subscriberBuffer = 256

// Hub holds the one LISTEN connection of a process and fans its
// notifications out to subscribers (long polls and SSE streams), so they
// cost no connection each and learn of decisions made on any replica.
type Hub struct {
	cfg *pgx.ConnConfig
	log *slog.Logger

	mu sync.Mutex
	// subs maps each subscription to whether Subscribers counts it.
	subs   map[chan Change]bool
	closed bool

	cancel context.CancelFunc
	done   chan struct{}
}

// NewHub returns a hub that will LISTEN over a connection made from cfg
// (copied; typically the pool's ConnConfig).
func NewHub(cfg *pgx.ConnConfig, log *slog.Logger) *Hub {
	return &Hub{cfg: cfg.Copy(), log: log, subs: map[chan Change]bool{}}
}

// Start connects and LISTENs before it returns, so a subscriber that
// subscribes after Start misses nothing; then it serves notifications in
// the background, reconnecting with backoff, until Close.
func (h *Hub) Start(ctx context.Context) error {
	conn, err := h.listen(ctx)
	if err != nil {
		return err
	}
	ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	h.done = make(chan struct{})
	go h.run(ctx, conn)
	return nil
}

// Close stops the hub and closes every subscription, which ends event
// streams and returns long polls at once: register it to run when the HTTP
// server starts shutting down, so open streams do not hold the shutdown
// for its whole grace period. It is safe to call more than once.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	for ch := range h.subs {
		close(ch)
		delete(h.subs, ch)
	}
	h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
		<-h.done
	}
}

// Closed reports whether Close was called.
func (h *Hub) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *Hub) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, h.cfg)
	if err != nil {
		return nil, fmt.Errorf("approvals listener: connect: %w", err)
	}
	if err := channelListen(cctx, conn); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("approvals listener: listen: %w", err)
	}
	return conn, nil
}

func (h *Hub) run(ctx context.Context, conn *pgx.Conn) {
	defer close(h.done)
	backoff := 100 * time.Millisecond
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			backoff = 100 * time.Millisecond
			var c Change
			if jerr := json.Unmarshal([]byte(n.Payload), &c); jerr != nil || c.ID == uuid.Nil {
				h.log.Warn("approvals listener: bad payload", "err", jerr)
				continue
			}
			h.publish(c)
			continue
		}
		_ = conn.Close(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("approvals listener: connection lost, reconnecting", "err", err)
		h.publish(Change{Resync: true})
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			// 100 ms doubling to 5 s: quick after a blip, gentle while the
			// database is down.
			backoff = min(backoff*2, 5*time.Second)
			conn, err = h.listen(ctx)
			if err == nil {
				break
			}
			h.log.Warn("approvals listener: reconnect failed", "err", err)
		}
		// Changes made while disconnected were not heard.
		h.publish(Change{Resync: true})
	}
}

// Subscribe returns a channel of every change from now on and a function
// that ends the subscription. The channel is closed when the subscriber
// lags by more than subscriberBuffer changes or the hub closes; after
// Close it is returned closed.
func (h *Hub) Subscribe() (<-chan Change, func()) { return h.subscribe(true) }

// Watch is Subscribe for a watcher that lasts as long as the process (the
// MCP endpoint's, which announces changes to its sessions). Subscribers
// does not count it: it counts the long polls and streams waiting now.
func (h *Hub) Watch() (<-chan Change, func()) { return h.subscribe(false) }

func (h *Hub) subscribe(counted bool) (<-chan Change, func()) {
	ch := make(chan Change, subscriberBuffer)
	h.mu.Lock()
	if h.closed {
		close(ch)
		h.mu.Unlock()
		return ch, func() {}
	}
	h.subs[ch] = counted
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
		h.mu.Unlock()
	}
}

// Subscribers returns how many long polls and streams are listening now
// (a gauge for metrics, and how tests know a poll is waiting).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, counted := range h.subs {
		if counted {
			n++
		}
	}
	return n
}

func (h *Hub) publish(c Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- c:
		default:
			delete(h.subs, ch)
			close(ch)
		}
	}
}
