package storetest

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// proxy stands between a test binary and the test server. Every URL
// storetest hands out names it, so every connection a test makes (its
// pools, the service or CLI it runs in process, a process it starts with
// the URL) passes through it, and it lets a connection through only
// while it holds one of the slots: the bound holds for connections
// storetest never sees being opened. It also waits out the server's
// "too many clients" (SQLSTATE 53300), which other work on a shared
// server causes whatever the bound, instead of failing the test.
//
// The proxy answers the startup exchange itself (asking for a per-binary
// password, so that it is no open door to the server on this machine),
// opens the server connection with pgconn as the client asked (user,
// database, parameters), hands the client the server's parameters and
// cancel key, and from then on copies bytes both ways. A cancel request
// goes to the server as it came.
type proxy struct {
	ln       net.Listener
	upstream *pgconn.Config
	b        *bound
	password string
	refused  atomic.Int64 // 53300s waited out, for tests
}

// slotWait bounds how long a connection waits for a slot before the
// client is refused with 53300 and a sentence naming the setting: long
// enough for any test's connections to come and go, short of go test's
// 10-minute timeout, which would end the binary without saying why.
const slotWait = 2 * time.Minute

// slotWaitWarn is when a waiting connection is reported on stderr, as
// the sign of a bound too small for what runs at once.
const slotWaitWarn = 15 * time.Second

func startProxy(adminURL string, b *bound) (*proxy, error) {
	cfg, err := pgconn.ParseConfig(adminURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvURL, err)
	}
	if err := plainOnly(cfg); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var pw [16]byte
	_, _ = rand.Read(pw[:])
	p := &proxy{ln: ln, upstream: cfg, b: b, password: hex.EncodeToString(pw[:])}
	go p.serve()
	return p, nil
}

// plainOnly keeps the ways to the server cfg allows without TLS (sslmode
// disable, allow or prefer): upConn must see the bytes pgconn reads.
func plainOnly(cfg *pgconn.Config) error {
	var plain []*pgconn.FallbackConfig
	for _, fc := range append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...) {
		if fc.TLSConfig == nil {
			plain = append(plain, fc)
		}
	}
	if len(plain) == 0 {
		return fmt.Errorf("%s asks for TLS (sslmode require or verify-*), which the tests' connection proxy does not speak: point it at a server the tests may reach with sslmode=disable", EnvURL)
	}
	cfg.Host, cfg.Port, cfg.TLSConfig, cfg.Fallbacks = plain[0].Host, plain[0].Port, nil, plain[1:]
	return nil
}

// url names database name through the proxy. It carries no pgxpool
// settings (pool_max_conn_idle_time and the like), which libpq refuses:
// `make run` passes it to psql.
func (p *proxy) url(name string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(p.upstream.User, p.password),
		Host: p.ln.Addr().String(), Path: "/" + name, RawQuery: "sslmode=disable"}
	return u.String()
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
)

func (p *proxy) handle(c net.Conn) {
	defer c.Close()
	// The startup exchange is the client's to finish promptly.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var startup *pgproto3.StartupMessage
	for startup == nil {
		code, body, err := readStartup(c)
		if err != nil {
			return
		}
		switch code {
		case sslRequestCode, gssEncRequestCode:
			// Plain text between the client and the proxy on loopback;
			// the proxy's own connection uses the server URL's TLS.
			if _, err := c.Write([]byte{'N'}); err != nil {
				return
			}
		case cancelRequestCode:
			p.cancel(body)
			return
		case pgproto3.ProtocolVersion30, pgproto3.ProtocolVersion32:
			startup = &pgproto3.StartupMessage{}
			if err := startup.Decode(body); err != nil {
				return
			}
		default:
			return
		}
	}
	var out []byte
	if startup.ProtocolVersion != pgproto3.ProtocolVersion30 {
		// The proxy's connection speaks 3.0, so the client must too.
		out, _ = (&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0}).Encode(out)
	}
	out, _ = (&pgproto3.AuthenticationCleartextPassword{}).Encode(out)
	if _, err := c.Write(out); err != nil {
		return
	}
	pw, err := readPassword(c)
	if err != nil {
		return
	}
	if subtle.ConstantTimeCompare([]byte(pw), []byte(p.password)) != 1 {
		refuse(c, "28P01", fmt.Sprintf("password authentication failed for user %q (the storetest proxy takes only the URLs storetest gives out)", startup.Parameters["user"]))
		return
	}
	_ = c.SetDeadline(time.Time{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A client that gives up while it waits (its context ended) closes
	// the connection; stop waiting for it then.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var b [1]byte
		if _, err := c.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
			cancel()
		}
	}()
	up, err := p.open(ctx, startup.Parameters)
	_ = c.SetReadDeadline(time.Now())
	<-watched
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		refuseWith(c, err)
		return
	}
	defer up.release()
	if ctx.Err() != nil {
		up.conn.Close()
		return
	}
	if _, err := c.Write(up.startupReply(nil)); err != nil {
		up.conn.Close()
		return
	}
	splice(c, up.conn)
}

type upstreamConn struct {
	*pgconn.HijackedConn
	conn    net.Conn
	release func()
}

// startupReply appends what the server told pgconn at the end of the
// startup: the client hears it as the server's answer to its own.
func (up *upstreamConn) startupReply(out []byte) []byte {
	out, _ = (&pgproto3.AuthenticationOk{}).Encode(out)
	for k, v := range up.ParameterStatuses {
		out, _ = (&pgproto3.ParameterStatus{Name: k, Value: v}).Encode(out)
	}
	out, _ = (&pgproto3.BackendKeyData{ProcessID: up.PID, SecretKey: up.SecretKey}).Encode(out)
	out, _ = (&pgproto3.ReadyForQuery{TxStatus: up.TxStatus}).Encode(out)
	return out
}

// open takes the right to a connection (bound.acquire) and opens a server
// connection as the client asked, waiting out 53300 with backoff (20 ms
// doubling to 1 s).
func (p *proxy) open(ctx context.Context, params map[string]string) (*upstreamConn, error) {
	db := params["database"]
	if db == "" {
		db = params["user"]
	}
	release, err := p.b.acquire(ctx, db)
	if err != nil {
		return nil, err
	}
	// The server may refuse for as long as a slot may be waited for.
	ctx, cancel := context.WithTimeout(ctx, slotWait)
	defer cancel()
	cfg := p.upstream.Copy()
	cfg.User = params["user"]
	cfg.Database = db
	for k, v := range params {
		if k != "user" && k != "database" {
			cfg.RuntimeParams[k] = v
		}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	var uc *upConn
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		uc = newUpConn(c)
		return uc, nil
	}
	wait := 20 * time.Millisecond
	for {
		c, err := pgconn.ConnectConfig(ctx, cfg)
		if err == nil {
			hc, err := c.Hijack()
			if err != nil {
				c.Close(context.Background())
				release()
				return nil, err
			}
			return &upstreamConn{HijackedConn: hc, conn: uc.take(), release: release}, nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "53300" {
			release()
			return nil, err
		}
		p.refused.Add(1)
		select {
		case <-ctx.Done():
			release()
			return nil, err
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		}
	}
}

// upConn is a server connection as pgconn opens it for the proxy. When a
// write of the startup takes over 15 ms (a busy machine), pgconn starts a
// reader of its own so that the server's reply cannot block the write; it
// stops that reader afterwards, but one already blocked in Read stays
// blocked, and would take the server's first reply to the client for
// itself, leaving the client waiting for ever. take ends such reads and
// refuses pgconn any further ones; the proxy reads the connection beneath.
type upConn struct {
	net.Conn
	mu      sync.Mutex
	idle    *sync.Cond
	taken   bool
	reading int
}

func newUpConn(c net.Conn) *upConn {
	uc := &upConn{Conn: c}
	uc.idle = sync.NewCond(&uc.mu)
	return uc
}

func (c *upConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if c.taken {
		c.mu.Unlock()
		// A timeout: pgconn's reader stops on it without a word.
		return 0, os.ErrDeadlineExceeded
	}
	c.reading++
	c.mu.Unlock()
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.reading--
	c.idle.Broadcast()
	c.mu.Unlock()
	return n, err
}

// take returns the connection beneath once no read of pgconn's is under
// way. The server sends nothing after the startup until the client asks,
// so a read ended here has read nothing.
func (c *upConn) take() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.taken = true
	if c.reading > 0 {
		_ = c.Conn.SetReadDeadline(time.Now())
		for c.reading > 0 {
			c.idle.Wait()
		}
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	return c.Conn
}

// cancel passes a cancel request on to the server, whose process and key
// the client had from the proxy unchanged.
func (p *proxy) cancel(body []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	network, addr := pgconn.NetworkAddress(p.upstream.Host, p.upstream.Port)
	c, err := p.upstream.DialFunc(ctx, network, addr)
	if err != nil {
		return
	}
	defer c.Close()
	msg := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
	if _, err := c.Write(append(msg, body...)); err != nil {
		return
	}
	// The server closes the connection when it has read the request.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(io.Discard, c)
}

// readStartup reads one untyped startup-phase message, exactly: nothing
// the client sends after it may be left in a buffer, since from the
// startup on the bytes are copied as they come.
func readStartup(r io.Reader) (code uint32, body []byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 8 || n > 10000 {
		return 0, nil, fmt.Errorf("startup message of %d bytes", n)
	}
	body = make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(body), body, nil
}

func readPassword(r io.Reader) (string, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if hdr[0] != 'p' || n < 4 || n > 1000 {
		return "", fmt.Errorf("want a password message, got %q of %d bytes", hdr[0], n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return "", err
	}
	var m pgproto3.PasswordMessage
	if err := m.Decode(body); err != nil {
		return "", err
	}
	return m.Password, nil
}

func refuse(c net.Conn, code, msg string) {
	out, _ := (&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg}).Encode(nil)
	_, _ = c.Write(out)
}

func refuseWith(c net.Conn, err error) {
	_, _ = c.Write(refusal(err))
}

// refusal is the server's own refusal (a database that does not exist
// stays 3D000), or 53300 for a slot that never came free, or 08006 for a
// server out of reach.
func refusal(err error) []byte {
	var pe *pgconn.PgError
	e := &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08006", Message: "storetest proxy: " + err.Error()}
	switch {
	case errors.As(err, &pe):
		e = &pgproto3.ErrorResponse{Severity: pe.Severity, SeverityUnlocalized: pe.SeverityUnlocalized,
			Code: pe.Code, Message: pe.Message, Detail: pe.Detail, Hint: pe.Hint}
	case errors.Is(err, errNoSlot):
		e.Code = "53300"
	}
	out, _ := e.Encode(nil)
	return out
}

var errNoSlot = errors.New("no connection slot")

// splice copies both ways until either side closes, then closes both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	a.Close()
	b.Close()
	<-done
}

// dial is the DialFunc of the pools storetest opens on its proxy's URLs
// (and of the pools and listeners made from their configs): the server
// connection is opened as the proxy opens one (a slot, 53300 waited
// out), and the client gets it without the proxy in between: a SELECT 1
// through the proxy measured 161 µs a round trip against 55 µs direct, on
// a busy 2-core machine.
func (p *proxy) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c := &directConn{p: p, ctx: ctx}
	c.cond = sync.NewCond(&c.mu)
	return c, nil
}

// directConn plays the proxy's part of the startup to pgconn in process,
// then is the server connection itself.
type directConn struct {
	p   *proxy
	ctx context.Context

	mu       sync.Mutex
	cond     *sync.Cond // the reply grew, or the connection ended
	written  []byte     // the client's startup messages, until one is whole
	reply    []byte     // the answers to them, not yet read
	up       *upstreamConn
	eof      bool // the startup ended without a server connection
	closed   bool
	deadline [2]time.Time // read, write: for the server connection once there
}

func (c *directConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	if up := c.up; up != nil {
		c.mu.Unlock()
		return up.conn.Write(b)
	}
	c.written = append(c.written, b...)
	for len(c.written) >= 8 && c.up == nil && !c.eof {
		n := int(binary.BigEndian.Uint32(c.written))
		if len(c.written) < n {
			break
		}
		body := c.written[4:n]
		c.written = c.written[n:]
		switch code := binary.BigEndian.Uint32(body); code {
		case sslRequestCode, gssEncRequestCode:
			c.reply = append(c.reply, 'N')
		case cancelRequestCode:
			c.mu.Unlock()
			c.p.cancel(body)
			c.mu.Lock()
			c.eof = true
		default:
			var m pgproto3.StartupMessage
			if err := m.Decode(body); err != nil {
				c.eof = true
				break
			}
			c.mu.Unlock()
			up, err := c.p.open(c.ctx, m.Parameters)
			c.mu.Lock()
			if err != nil {
				c.reply = append(c.reply, refusal(err)...)
				c.eof = true
				break
			}
			if c.closed {
				up.conn.Close()
				up.release()
				c.eof = true
				break
			}
			c.up = up
			c.reply = up.startupReply(c.reply)
			_ = up.conn.SetReadDeadline(c.deadline[0])
			_ = up.conn.SetWriteDeadline(c.deadline[1])
		}
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	return len(b), nil
}

func (c *directConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	for len(c.reply) == 0 && c.up == nil && !c.eof && !c.closed {
		c.cond.Wait()
	}
	if len(c.reply) > 0 {
		n := copy(b, c.reply)
		c.reply = c.reply[n:]
		c.mu.Unlock()
		return n, nil
	}
	up := c.up
	c.mu.Unlock()
	if up == nil {
		return 0, io.EOF
	}
	return up.conn.Read(b)
}

func (c *directConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.cond.Broadcast()
	if c.up == nil {
		return nil
	}
	err := c.up.conn.Close()
	c.up.release()
	return err
}

func (c *directConn) LocalAddr() net.Addr  { return c.addr(net.Conn.LocalAddr) }
func (c *directConn) RemoteAddr() net.Addr { return c.addr(net.Conn.RemoteAddr) }

// addr is the server connection's, or the proxy's before there is one.
func (c *directConn) addr(of func(net.Conn) net.Addr) net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.up != nil {
		return of(c.up.conn)
	}
	return c.p.ln.Addr()
}

func (c *directConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *directConn) SetReadDeadline(t time.Time) error  { return c.setDeadline(0, t) }
func (c *directConn) SetWriteDeadline(t time.Time) error { return c.setDeadline(1, t) }

// setDeadline passes a deadline to the server connection; one set during
// the startup (pgconn's on a cancelled context) waits for it, and the
// startup itself ends with its context.
func (c *directConn) setDeadline(which int, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline[which] = t
	if c.up == nil {
		return nil
	}
	if which == 0 {
		return c.up.conn.SetReadDeadline(t)
	}
	return c.up.conn.SetWriteDeadline(t)
}
