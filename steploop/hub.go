package steploop

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// chatChannel is the LISTEN/NOTIFY channel of the run log. A payload is a
// conversation id (its run logged a batch: readers read the log) or
// "stop:" and a run id (POST /v1/chat/{id}/stop asked the replica running
// it to stop it).
const chatChannel = "invoiced_chat"

const stopPrefix = "stop:"

// hub holds a replica's one LISTEN connection for the run log and wakes
// the readers following a conversation's run; stop requests go to onStop.
type hub struct {
	cfg    *pgx.ConnConfig
	log    *slog.Logger
	onStop func(run uuid.UUID)

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// startHub connects and LISTENs before it returns, so a reader that
// subscribes afterwards misses nothing; then it serves notifications until
// close, reconnecting with backoff (every reader is woken after a
// reconnect: notifications may have been missed meanwhile).
func startHub(ctx context.Context, cfg *pgx.ConnConfig, log *slog.Logger, onStop func(uuid.UUID)) (*hub, error) {
	h := &hub{cfg: cfg.Copy(), log: log, onStop: onStop, subs: map[string]map[chan struct{}]struct{}{}}
	conn, err := h.listen(ctx)
	if err != nil {
		return nil, err
	}
	ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	h.done = make(chan struct{})
	go h.run(ctx, conn)
	return h, nil
}

func (h *hub) close() {
	h.cancel()
	<-h.done
}

func (h *hub) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, h.cfg)
	if err != nil {
		return nil, fmt.Errorf("chat listener: connect: %w", err)
	}
	if _, err := conn.Exec(cctx, "LISTEN "+chatChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("chat listener: listen: %w", err)
	}
	return conn, nil
}

func (h *hub) run(ctx context.Context, conn *pgx.Conn) {
	defer close(h.done)
	backoff := 100 * time.Millisecond
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			backoff = 100 * time.Millisecond
			h.deliver(n.Payload)
			continue
		}
		_ = conn.Close(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("chat listener: connection lost, reconnecting", "err", err)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			// 100 ms doubling to 5 s: quick after a blip, gentle while the
			// database is down.
			backoff = min(backoff*2, 5*time.Second)
			if conn, err = h.listen(ctx); err == nil {
				break
			}
			h.log.Warn("chat listener: reconnect failed", "err", err)
		}
		h.wakeAll()
	}
}

func (h *hub) deliver(payload string) {
	if id, ok := strings.CutPrefix(payload, stopPrefix); ok {
		if run, err := uuid.Parse(id); err == nil {
			h.onStop(run)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[payload] {
		wake(ch)
	}
}

func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, chs := range h.subs {
		for ch := range chs {
			wake(ch)
		}
	}
}

// wake signals ch without blocking: one pending wake-up is enough, since
// a woken reader reads everything logged so far.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// subscribe returns a channel signalled whenever the run of conversation
// id logs a batch or ends, and a function ending the subscription. A nil
// hub returns a channel that is never signalled (readers then poll).
func (h *hub) subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	if h == nil {
		return ch, func() {}
	}
	h.mu.Lock()
	if h.subs[id] == nil {
		h.subs[id] = map[chan struct{}]struct{}{}
	}
	h.subs[id][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[id], ch)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
		h.mu.Unlock()
	}
}
