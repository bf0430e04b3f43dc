package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// A Notifiee receives the notifications of one LISTEN channel.
type Notifiee interface {
	// Notify is called with each notification's payload, in order, from
	// the listener's one goroutine: it must not block.
	Notify(payload string)
	// Resync is called when the connection is lost and again once it is
	// back: notifications sent meanwhile were not heard, so whoever waits
	// on them re-reads what they watch.
	Resync()
}

// Listener holds the one LISTEN connection of a process, for every
// channel registered with Handle, so that waiters on any replica learn of
// what another committed without a connection each. It needs a direct
// connection to PostgreSQL: a pooler in transaction mode drops LISTEN.
type Listener struct {
	cfg *pgx.ConnConfig
	log *slog.Logger

	mu        sync.Mutex
	notifiees map[string]Notifiee
	cancel    context.CancelFunc
	done      chan struct{}
}

// ListenerName is the application_name of a listener's connection, which
// names it in pg_stat_activity.
const ListenerName = "invoiced listener"

// NewListener returns a listener that will connect with cfg (copied;
// typically the pool's ConnConfig).
func NewListener(cfg *pgx.ConnConfig, log *slog.Logger) *Listener {
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = ListenerName
	return &Listener{cfg: cfg, log: log, notifiees: map[string]Notifiee{}}
}

// Handle registers n for channel; it must be called before Start.
func (l *Listener) Handle(channel string, n Notifiee) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notifiees[channel] = n
}

// Start connects and LISTENs on every channel before it returns, so a
// waiter that subscribes after Start misses nothing; then it serves
// notifications in the background, reconnecting with backoff (a restart
// of PostgreSQL, a failover), until Close.
func (l *Listener) Start(ctx context.Context) error {
	conn, err := l.listen(ctx)
	if err != nil {
		return err
	}
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	l.done = make(chan struct{})
	go l.run(ctx, conn)
	return nil
}

// Close stops listening and waits for the goroutine to end. It is safe to
// call on a listener never started, and more than once.
func (l *Listener) Close() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
}

func (l *Listener) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	if err != nil {
		return nil, fmt.Errorf("listener: connect: %w", err)
	}
	l.mu.Lock()
	channels := make([]string, 0, len(l.notifiees))
	for ch := range l.notifiees {
		channels = append(channels, ch)
	}
	l.mu.Unlock()
	for _, ch := range channels {
		if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("listener: listen %s: %w", ch, err)
		}
	}
	return conn, nil
}

func (l *Listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			backoff = 100 * time.Millisecond
			l.mu.Lock()
			to := l.notifiees[n.Channel]
			l.mu.Unlock()
			if to != nil {
				to.Notify(n.Payload)
			}
			continue
		}
		_ = conn.Close(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("listener: connection to the database lost, reconnecting", "err", err)
		l.resync()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			// 100 ms doubling to 5 s: quick after a blip, gentle while the
			// database is down.
			backoff = min(backoff*2, 5*time.Second)
			if conn, err = l.listen(ctx); err == nil {
				break
			}
			l.log.Warn("listener: reconnect failed", "err", err)
		}
		l.log.Info("listener: reconnected")
		l.resync()
	}
}

func (l *Listener) resync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.notifiees {
		n.Resync()
	}
}
