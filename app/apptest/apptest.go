// Package apptest runs the whole service in-process over a database of the
// test's own, for tests that go through HTTP exactly as clients do.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Harness is a running service and its database.
type Harness struct {
	URL    string
	DBURL  string
	Pool   *pgxpool.Pool
	App    *app.App
	Server *httptest.Server
}

// Options tweak the service under test.
type Options struct {
	// Config is passed to app.New.
	Config app.Config
	// Log receives the service's logs; nil discards them.
	Log *slog.Logger
	// DatabaseURL, when set, is a migrated database to run on (such as a
	// storetest.Cluster's) instead of a new clone of the test server's.
	DatabaseURL string
	// NoSeller leaves the seller unset; otherwise a new database gets
	// invoicetest.DefaultSeller, so that its invoices can be issued.
	NoSeller bool
	// SendBuffer, when set, is each accepted connection's socket send
	// buffer (SO_SNDBUF) in bytes. Set, the kernel no longer grows it:
	// a test of a client that stopped reading sets it small, so that a
	// backlog of a few kilobytes blocks the server's write for certain.
	SendBuffer int
}

// New starts the service on a fresh migrated database.
func New(t testing.TB, opts Options) *Harness {
	t.Helper()
	dbURL := opts.DatabaseURL
	if dbURL == "" {
		dbURL = storetest.URL(t)
	}
	pool := storetest.PoolFor(t, dbURL)
	if !opts.NoSeller && opts.DatabaseURL == "" {
		invoicetest.Seller(context.Background(), t, pool, invoicetest.DefaultSeller)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a, err := app.New(context.Background(), opts.Config, pool, log)
	if err != nil {
		t.Fatalf("apptest: app.New: %v", err)
	}
	t.Cleanup(a.Close)
	e := server.New(server.DefaultConfig(), log, func(ctx context.Context) error { return pool.Ping(ctx) })
	a.Routes(e)
	// Every exchange of the test is held to openapi/openapi.yaml.
	srv := httptest.NewUnstartedServer(openapitest.Wrap(t, e))
	if opts.SendBuffer > 0 {
		srv.Listener = sendBufferListener{srv.Listener, opts.SendBuffer}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return &Harness{URL: srv.URL, DBURL: dbURL, Pool: pool, App: a, Server: srv}
}

// sendBufferListener sets each accepted TCP connection's send buffer.
type sendBufferListener struct {
	net.Listener
	bytes int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := c.(*net.TCPConn).SetWriteBuffer(l.bytes); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Replica starts another instance of the service over h's database, with
// a pool of its own, as a second replica runs.
func (h *Harness) Replica(t testing.TB, opts Options) *Harness {
	t.Helper()
	opts.DatabaseURL = h.DBURL
	return New(t, opts)
}

// User creates a user with role and returns it with an API token.
func (h *Harness) User(t testing.TB, username string, role identity.Role) (*identity.User, string) {
	t.Helper()
	ctx := context.Background()
	u, err := identity.UserCreate(ctx, h.Pool, identity.UserCreateParams{Username: username, DisplayName: username, Role: role})
	if err != nil {
		t.Fatalf("apptest: create user: %v", err)
	}
	tok, err := identity.TokenCreate(ctx, h.Pool, u.ID, "test")
	if err != nil {
		t.Fatalf("apptest: create token: %v", err)
	}
	return u, tok
}

// Response is a finished HTTP exchange.
type Response struct {
	*http.Response
	Body []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("apptest: decode %s: %v", r.Body, err)
	}
}

// Problem decodes a problem+json body.
func (r *Response) Problem(t testing.TB) map[string]any {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != server.ProblemContentType {
		t.Fatalf("apptest: want %s, got %q (status %d, body %s)", server.ProblemContentType, ct, r.StatusCode, r.Body)
	}
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Do sends a request; body may be nil, a string/[]byte (sent as is) or a
// value marshalled as JSON. headers are key, value pairs.
func (h *Harness) Do(t testing.TB, method, path, token string, body any, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("apptest: marshal: %v", err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, h.URL+path, rd)
	if err != nil {
		t.Fatalf("apptest: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("apptest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("apptest: read body: %v", err)
	}
	return &Response{Response: resp, Body: b}
}
