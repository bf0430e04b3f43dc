package storetest

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// privateProxy is a proxy to the test server with n slots of its own, so
// that a test can fill them without touching the suite's.
func privateProxy(t *testing.T, n int) *proxy {
	t.Helper()
	p, err := startProxy(ServerURL(t), privateBound(t, n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.ln.Close() })
	return p
}

// privateBound has n slots and no rooms.
func privateBound(t *testing.T, n int) *bound {
	t.Helper()
	s, err := openSlots(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return &bound{total: n, conns: s, entered: map[string]*room{}, own: map[string]bool{}}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// ways are the two ways to the server through a proxy: over TCP, as a
// process started with one of its URLs connects, and dialled in process,
// as storetest's pools connect.
var ways = map[string]func(p *proxy, cfg *pgx.ConnConfig){
	"tcp":  func(*proxy, *pgx.ConnConfig) {},
	"dial": func(p *proxy, cfg *pgx.ConnConfig) { cfg.DialFunc = p.dial },
}

func connectVia(p *proxy, way, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(p.url(db))
	if err != nil {
		return nil, err
	}
	ways[way](p, cfg)
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 10 * time.Second}
	}
	return pgx.ConnectConfig(context.Background(), cfg)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

// TestProxyHoldsConnectionsToTheBound: with every slot held, one more
// connection waits instead of failing, and goes through when one closes.
func TestProxyHoldsConnectionsToTheBound(t *testing.T) {
	t.Parallel()
	for way := range ways {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			testBound(t, way)
		})
	}
}

func testBound(t *testing.T, way string) {
	p := privateProxy(t, 2)
	db := p.upstream.Database
	a, err := connectVia(p, way, db)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	b, err := connectVia(p, way, db)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())

	third := make(chan error, 1)
	go func() {
		c, err := connectVia(p, way, db)
		if err == nil {
			var one int
			err = c.QueryRow(context.Background(), "SELECT 1").Scan(&one)
			c.Close(context.Background())
		}
		third <- err
	}()
	eventually(t, "the third connection waits for a slot", func() bool { return p.b.conns.waiters() == 1 })
	select {
	case err := <-third:
		t.Fatalf("a third connection got through two slots: %v", err)
	default:
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatalf("the third connection, once a slot came free: %v", err)
	}
}

// TestProxyWaitsOutTooManyClients: a server that refuses a connection
// with 53300 (here one allowing two, both taken) is asked again until it
// takes it, instead of the test failing.
func TestProxyWaitsOutTooManyClients(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "-c max_connections=2 -c superuser_reserved_connections=0")
	a := connect(t, c.URL)
	connect(t, c.URL)
	p, err := startProxy(c.URL, privateBound(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.ln.Close() })

	third := make(chan error, 1)
	go func() {
		c, err := pgx.Connect(context.Background(), p.url("postgres"))
		if err == nil {
			c.Close(context.Background())
		}
		third <- err
	}()
	eventually(t, "the server refuses the third connection", func() bool { return p.refused.Load() > 0 })
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatalf("the third connection, once the server had room: %v", err)
	}
}

// TestProxyPassesTheServersWords: the client reads the server's own
// refusal (a missing database stays 3D000), a cancel reaches the
// server's process and leaves the connection usable, and a client
// without the proxy's password gets nothing.
func TestProxyPassesTheServersWords(t *testing.T) {
	t.Parallel()
	for way := range ways {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			testWords(t, way)
		})
	}
}

func testWords(t *testing.T, way string) {
	p := privateProxy(t, 4)
	ctx := context.Background()

	_, err := connectVia(p, way, "invoiced_not_there")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3D000" {
		t.Fatalf("a missing database: want 3D000, got %v", err)
	}

	conn, err := connectVia(p, way, p.upstream.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = conn.Exec(qctx, "SELECT pg_sleep(30)")
	cancel()
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("a cancelled statement: want 57014 from the server, got %v", err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("the connection after a cancel: %v", err)
	}

	if way == "tcp" {
		wrong, err := pgx.ParseConfig(p.url(p.upstream.Database))
		if err != nil {
			t.Fatal(err)
		}
		wrong.Password = "guess"
		_, err = pgx.ConnectConfig(ctx, wrong)
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Fatalf("a wrong password: want 28P01, got %v", err)
		}
	}
}

// TestRoomsAreSharedWithinATest: a test's subtests share its room (one
// waiting for a room its parent holds would wait for ever); another test's
// subtest, its parent holding none, waits for a room of its own until the
// last of them leaves.
func TestRoomsAreSharedWithinATest(t *testing.T) {
	t.Parallel()
	b := privateBound(t, 4)
	rooms, err := openSlots(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rooms.close)
	b.rooms = rooms
	leaveParent := b.enter("TestParent")
	leaveSub := b.enter("TestParent/sub/subsub") // returns: shared, not waiting

	other := make(chan func(), 1)
	go func() { other <- b.enter("TestOther/sub") }()
	eventually(t, "another test waits for the room", func() bool { return rooms.waiters() == 1 })
	leaveParent()
	select {
	case <-other:
		t.Fatal("another test entered while a subtest held the room")
	case <-time.After(50 * time.Millisecond):
	}
	leaveSub()
	(<-other)()
}

// TestTakeEndsAStrayRead: a read pgconn left blocked on the server
// connection ends when the proxy takes the connection over, without
// taking the bytes that follow, and pgconn gets no more.
func TestTakeEndsAStrayRead(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	defer server.Close()
	uc := newUpConn(client)
	stray := make(chan error, 1)
	go func() {
		_, err := uc.Read(make([]byte, 8))
		stray <- err
	}()
	eventually(t, "the stray read is under way", func() bool {
		uc.mu.Lock()
		defer uc.mu.Unlock()
		return uc.reading == 1
	})
	c := uc.take()
	if err := <-stray; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the stray read: want a timeout, got %v", err)
	}
	if _, err := uc.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read of pgconn's after the take: want a timeout, got %v", err)
	}
	go func() { _, _ = server.Write([]byte("reply")) }()
	b := make([]byte, 8)
	n, err := c.Read(b)
	if err != nil || string(b[:n]) != "reply" {
		t.Fatalf("the proxy's read: got %q, %v", b[:n], err)
	}
}
