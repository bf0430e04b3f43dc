package store_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heard records what a channel's Notifiee was told.
type heard struct {
	mu       sync.Mutex
	payloads []string
	resyncs  int
}

func (h *heard) Notify(p string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.payloads = append(h.payloads, p)
}
func (h *heard) Resync() { h.mu.Lock(); defer h.mu.Unlock(); h.resyncs++ }

func (h *heard) state() ([]string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.payloads...), h.resyncs
}

// One LISTEN connection serves every channel, each to its own Notifiee,
// and comes back by itself after PostgreSQL restarts: both channels are
// heard again, and each was told to resync (what was sent meanwhile was
// missed).
func TestListenerServesEveryChannelAcrossARestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := storetest.NewCluster(t)
	pool, err := pgxpool.New(ctx, cluster.URL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	l := store.NewListener(pool.Config().ConnConfig, slog.New(slog.NewTextHandler(io.Discard, nil)))
	approvals, chat := &heard{}, &heard{}
	l.Handle("test_approvals", approvals)
	l.Handle("test_chat", chat)
	require.NoError(t, l.Start(ctx))
	t.Cleanup(l.Close)

	notify := func(channel, payload string) {
		t.Helper()
		_, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
		require.NoError(t, err)
	}
	hears := func(h *heard, want []string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got, _ := h.state()
			assert.Equal(c, want, got)
		}, 10*time.Second, 10*time.Millisecond)
	}
	notify("test_approvals", "a1")
	notify("test_chat", "c1")
	notify("test_elsewhere", "x")
	hears(approvals, []string{"a1"})
	hears(chat, []string{"c1"})
	var listening int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, store.ListenerName).Scan(&listening))
	require.Equal(t, 1, listening, "one connection for both channels")

	cluster.Crash(t)
	cluster.Start(t)
	pool.Reset() // the test's own connections died with the server
	require.Eventually(t, func() bool {
		_, ra := approvals.state()
		_, rc := chat.state()
		return ra >= 2 && rc >= 2
	}, 30*time.Second, 10*time.Millisecond, "told when the connection was lost and when it was back")
	notify("test_approvals", "a2")
	notify("test_chat", "c2")
	hears(approvals, []string{"a1", "a2"})
	hears(chat, []string{"c1", "c2"})
}
