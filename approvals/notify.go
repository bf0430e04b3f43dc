package approvals

import (
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/google/uuid"
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

// Hub fans the notifications of Channel (a store.Listener's, the one
// LISTEN connection of a process) out to subscribers (long polls and SSE
// streams), so they cost no connection each and learn of decisions made on
// any replica.
type Hub struct {
	log *slog.Logger

	mu sync.Mutex
	// subs maps each subscription to whether Subscribers counts it.
	subs   map[chan Change]bool
	closed bool
}

// NewHub returns a hub; register it with a store.Listener for Channel.
func NewHub(log *slog.Logger) *Hub {
	return &Hub{log: log, subs: map[chan Change]bool{}}
}

// Close closes every subscription, which ends event streams and returns
// long polls at once: register it to run when the HTTP server starts
// shutting down, so open streams do not hold the shutdown for its whole
// grace period. It is safe to call more than once.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		close(ch)
		delete(h.subs, ch)
	}
}

// Closed reports whether Close was called.
func (h *Hub) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// Notify publishes an announced change (store.Notifiee).
func (h *Hub) Notify(payload string) {
	var c Change
	if err := json.Unmarshal([]byte(payload), &c); err != nil || c.ID == uuid.Nil {
		h.log.Warn("approvals listener: bad payload", "err", err)
		return
	}
	h.publish(c)
}

// Resync tells every subscriber that changes may have been missed
// (store.Notifiee).
func (h *Hub) Resync() { h.publish(Change{Resync: true}) }

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
