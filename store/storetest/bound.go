package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvMaxConns names the bound on the connections to the test server that
// the tests of all test processes on this machine hold at once.
const EnvMaxConns = "INVOICED_TEST_MAX_CONNS"

// DefaultMaxConns is the bound without EnvMaxConns: half of PostgreSQL's
// default max_connections of 100, which leaves the other half to `make
// run`, a benchmark or another checkout's service on the same server, and
// makes 4 rooms (below): as many tests with databases of their own as
// `go test ./...` runs at once on 2 cores (2 binaries, 2 tests each). A
// test binary that finds fewer free when it starts holds to those.
const DefaultMaxConns = 50

// roomConns is what a room is counted as: a running service holds 8–9
// connections at once (River's pool and its listener, the approvals and
// chat listeners, a request or two), measured through the proxy over the
// app package's tests.
const roomConns = 10

// minFree is what the rooms leave of the bound at least, and what the
// connections to tests' own databases may never take: the transactions of
// Tx (one per running test), the clones and drops, and the template's
// build, across the test binaries running at once. Without them a test
// holding a room could wait for its clone behind other tests' busy pools.
const minFree = 4

// bound is how the connections of the tests are shared. Each connection
// holds one of the slots while it is open. A test with a database of its
// own (URL, EmptyURL, Pool) runs services and processes that hold several
// for their lives, and its steps have deadlines (a service's 5 s start, a
// 10 s Eventually) that a connection waiting midway for other tests' would
// miss. So such a test first enters one of the rooms, as many as fit
// roomConns each beside minFree, and waits for one at its start, outside
// those deadlines: the tests that hold connections for their lives are
// few enough that the slots go round.
type bound struct {
	total    int    // the bound itself
	conns    *slots // one per connection
	reserved int    // the first slots, kept from connections to tests' own databases
	rooms    *slots // nil in a test's private proxy

	mu      sync.Mutex
	entered map[string]*room // by the name of the test that took it
	own     map[string]bool  // tests' own databases
}

// room is a test's place among those with databases of their own. Its
// subtests share it: one that waited for a room while its parent held one
// could wait for ever. Subtests of a test without one take rooms of their
// own, so that parallel subtests, each running a service, need not fit in
// one.
type room struct {
	users   int
	ready   chan struct{}
	release func()
}

var (
	proxyOnce sync.Once
	theProxy  *proxy
	proxyErr  error
	// startedProxy is theProxy once started, for pools on other servers
	// (a Cluster's), which must not start one.
	startedProxy atomic.Pointer[proxy]
)

// connProxy returns the test binary's proxy to the server.
func connProxy(t testing.TB) *proxy {
	t.Helper()
	admin := ServerURL(t)
	proxyOnce.Do(func() {
		theProxy, proxyErr = newProxy(admin)
		startedProxy.Store(theProxy)
	})
	if proxyErr != nil {
		t.Fatalf("storetest: %v", proxyErr)
	}
	return theProxy
}

// adminURL is the server's admin database through the proxy.
func adminURL(t testing.TB) string {
	t.Helper()
	p := connProxy(t)
	return p.url(p.upstream.Database)
}

// newProxy sets the bound: EnvMaxConns, or what the server has free when
// the binary starts if that is less (other work holding 85 of 100 leaves
// 15), and the rooms: 4 at the default, 1 with 15.
func newProxy(admin string) (*proxy, error) {
	n := DefaultMaxConns
	if v := os.Getenv(EnvMaxConns); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < minFree+4 {
			// A room of 4: a service's two listeners, River's and a request.
			return nil, fmt.Errorf("%s=%q: want a whole number of connections, at least %d", EnvMaxConns, v, minFree+4)
		}
	}
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvURL, err)
	}
	// One set of slots per server, shared by every test process of every
	// checkout on this machine.
	key := sha256.Sum256([]byte(fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)))
	dir := filepath.Join(os.TempDir(), "invoiced-test-conns-"+hex.EncodeToString(key[:6]))
	b := &bound{reserved: minFree, entered: map[string]*room{}, own: map[string]bool{}}
	if b.conns, err = openSlots(filepath.Join(dir, "conns"), n); err != nil {
		return nil, fmt.Errorf("connection slots: %w", err)
	}
	// What the tests hold now is theirs to share again.
	free, err := serverFree(admin, b.conns.inUse())
	if err != nil {
		return nil, err
	}
	if free < n {
		n = max(free, minFree+4)
		fmt.Fprintf(os.Stderr, "storetest: the server has %d connections free for the tests; they hold at most %d at once\n", free, n)
		b.conns.limit(n)
	}
	b.total = n
	if b.rooms, err = openSlots(filepath.Join(dir, "rooms"), max(1, (n-minFree)/roomConns)); err != nil {
		return nil, fmt.Errorf("room slots: %w", err)
	}
	return startProxy(admin, b)
}

// serverFree counts the connections the server would still take from
// the tests' role, adding back held, the tests' own.
func serverFree(admin string, held int) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), slotWait)
	defer cancel()
	var conn *pgx.Conn
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var err error
		conn, err = pgx.Connect(ctx, admin)
		var pe *pgconn.PgError
		if err == nil {
			break
		}
		if !errors.As(err, &pe) || pe.Code != "53300" || ctx.Err() != nil {
			return 0, fmt.Errorf("connect %s: %w", EnvURL, err)
		}
		time.Sleep(wait)
	}
	defer conn.Close(context.Background())
	var free int
	// Its own connection is about to go: + 1.
	err := conn.QueryRow(ctx, `SELECT current_setting('max_connections')::int + 1
		- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int
		- CASE WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN 0
		       ELSE current_setting('superuser_reserved_connections')::int
		          + coalesce(current_setting('reserved_connections', true), '0')::int END`).Scan(&free)
	if err != nil {
		return 0, fmt.Errorf("count the server's free connections: %w", err)
	}
	return free + held, nil
}

// enterRoom waits until t may hold databases of its own, and leaves at
// the cleanup of the last of the tests that share its room.
func (b *bound) enterRoom(t testing.TB) {
	t.Helper()
	t.Cleanup(b.enter(t.Name()))
}

// enter shares the room of test name or of its nearest parent that has
// one, or else takes one for name, and returns the leaving.
func (b *bound) enter(name string) (leave func()) {
	b.mu.Lock()
	key, r := name, b.entered[name]
	for i := len(name); r == nil && i > 0; i = strings.LastIndexByte(name[:i], '/') {
		if p := b.entered[name[:i]]; p != nil {
			key, r = name[:i], p
		}
	}
	first := r == nil
	if first {
		r = &room{ready: make(chan struct{})}
		b.entered[key] = r
	}
	r.users++
	b.mu.Unlock()
	if first {
		warn := time.AfterFunc(time.Minute, func() {
			fmt.Fprintf(os.Stderr, "storetest: %s has waited a minute for one of the %d rooms for tests with databases of their own (%s=%d)\n",
				key, len(b.rooms.files), EnvMaxConns, b.total)
		})
		// No deadline: rooms come free as other tests end.
		r.release, _ = b.rooms.acquire(context.Background(), 0)
		warn.Stop()
		close(r.ready)
	}
	<-r.ready
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if r.users--; r.users == 0 {
			delete(b.entered, key)
			r.release()
		}
	}
}

// owns marks db as a test's own database until the returned func.
func (b *bound) owns(db string) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.own[db] = true
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.own, db)
	}
}

// acquire waits for a slot for one connection to database db, up to
// slotWait.
func (b *bound) acquire(ctx context.Context, db string) (release func(), err error) {
	from := 0
	b.mu.Lock()
	if b.own[db] {
		from = b.reserved
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, slotWait)
	defer cancel()
	start := time.Now()
	warn := time.AfterFunc(slotWaitWarn, func() {
		fmt.Fprintf(os.Stderr, "storetest: a connection to database %q has waited %s for one of the %d connection slots (%s); %d are held\n",
			db, slotWaitWarn, b.total, EnvMaxConns, b.conns.inUse())
	})
	defer warn.Stop()
	release, err = b.conns.acquire(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("%w came free in %s: all %d (%s) stay held; raise %s if the server has room",
			errNoSlot, time.Since(start).Round(time.Second), b.total, EnvMaxConns, EnvMaxConns)
	}
	return release, nil
}
