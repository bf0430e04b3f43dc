package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

// TestDatabaseOutage stops the service's database (a throwaway cluster of
// this test's own) under the running service: every request that needs it
// answers 503 UNAVAILABLE with Retry-After, as problem+json under /v1 and
// as an HTML page in the inbox, without a word about the cause; /healthz
// stays up and /readyz says 503. Once the database is back, the same
// requests succeed without restarting anything.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := storetest.NewCluster(t)
	h := apptest.New(t, apptest.Options{DatabaseURL: cluster.URL})
	clerk, token := h.User(t, "olga", identity.RoleClerk)
	session, _, err := web.SessionCreate(ctx, h.Pool, clerk.ID, time.Hour)
	require.NoError(t, err)

	r := h.Do(t, "POST", "/v1/customers", token, map[string]any{"name": "Acme", "currency": "EUR"})
	require.Equal(t, http.StatusCreated, r.StatusCode, string(r.Body))
	var customer struct{ ID string }
	r.JSON(t, &customer)

	type call struct {
		method, path, token string
		body                any
		headers             []string
		ok                  int
	}
	api := []call{
		{"GET", "/v1/me", token, nil, nil, http.StatusOK},
		{"GET", "/v1/invoices", token, nil, nil, http.StatusOK},
		{"GET", "/v1/customers/" + customer.ID, token, nil, nil, http.StatusOK},
		{"GET", "/v1/approvals", token, nil, nil, http.StatusOK},
		{"POST", "/v1/invoices", token, map[string]any{"customer_id": customer.ID}, nil, http.StatusCreated},
		{"POST", "/v1/customers", token, map[string]any{"name": "Beta", "currency": "EUR"}, []string{"Idempotency-Key", "outage-1"}, http.StatusCreated},
		{"POST", "/v1/capabilities/list-customers/invoke", token, map[string]any{"input": map[string]any{}}, nil, http.StatusOK},
		// A token the database does not know: only the database can say so.
		{"GET", "/v1/me", "inv_" + strings.Repeat("A", 43), nil, nil, http.StatusUnauthorized},
	}
	pages := []string{"/inbox", "/invoices"}
	page := func(path string) *apptest.Response {
		t.Helper()
		return h.Do(t, "GET", path, "", nil, "Cookie", web.SessionCookie+"="+session)
	}
	for _, c := range api {
		r := h.Do(t, c.method, c.path, c.token, c.body, c.headers...)
		require.Equal(t, c.ok, r.StatusCode, "%s %s: %s", c.method, c.path, r.Body)
	}
	for _, p := range pages {
		require.Equal(t, http.StatusOK, page(p).StatusCode, p)
	}

	cluster.Stop(t)
	stopped := time.Now()
	down := func(round string) {
		t.Helper()
		for _, c := range api {
			r := h.Do(t, c.method, c.path, c.token, c.body, c.headers...)
			what := round + ": " + c.method + " " + c.path
			require.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "%s: %s", what, r.Body)
			require.Equal(t, "UNAVAILABLE", r.Problem(t)["code"], what)
			require.Equal(t, "5", r.Header.Get("Retry-After"), what)
			requireNoInternals(t, what, r)
		}
		for _, p := range pages {
			r := page(p)
			require.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "%s: %s: %s", round, p, r.Body)
			require.Contains(t, r.Header.Get("Content-Type"), "text/html", p)
			require.Equal(t, "5", r.Header.Get("Retry-After"), p)
			requireNoInternals(t, round+": "+p, r)
		}
		require.Equal(t, http.StatusOK, h.Do(t, "GET", "/healthz", "", nil).StatusCode)
		r := h.Do(t, "GET", "/readyz", "", nil)
		require.Equal(t, http.StatusServiceUnavailable, r.StatusCode)
		require.Equal(t, "UNAVAILABLE", r.Problem(t)["code"])
		require.Equal(t, "5", r.Header.Get("Retry-After"), "/readyz")
	}
	// Right away, a request may meet a pooled connection the shutdown
	// ended (a broken pipe, the server's 57P01) or find none and be
	// refused a new one...
	down("just stopped")
	// ... and once every pooled connection has been idle over pgxpool's
	// 1 s ping threshold (each is then pinged, found dead and dropped),
	// only new connections are tried, and refused. This also leaves no
	// dead connection in the pool for the first request after the start.
	time.Sleep(time.Until(stopped.Add(1100 * time.Millisecond)))
	down("stopped for a while")

	cluster.Start(t)
	for _, c := range api {
		r := h.Do(t, c.method, c.path, c.token, c.body, c.headers...)
		require.Equal(t, c.ok, r.StatusCode, "back: %s %s: %s", c.method, c.path, r.Body)
	}
	for _, p := range pages {
		require.Equal(t, http.StatusOK, page(p).StatusCode, p)
	}
	require.Equal(t, http.StatusOK, h.Do(t, "GET", "/readyz", "", nil).StatusCode)
}

// A database that accepts no writes (a hot standby after a failover, or
// one put in read-only mode) refuses a write with SQLSTATE 25006: that is
// the database not serving the request, 503 UNAVAILABLE with Retry-After
// like an outage, never a 500, and nothing of the cause is told. Reads go
// on being served.
func TestReadOnlyDatabaseIs503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ro := apptest.New(t, apptest.Options{})
	_, token := ro.User(t, "olga", identity.RoleClerk)
	// The first request records the token's use (a write), as it would
	// have before the database went read-only.
	r := ro.Do(t, "POST", "/v1/customers", token, map[string]any{"name": "Acme", "currency": "EUR"})
	require.Equal(t, http.StatusCreated, r.StatusCode, string(r.Body))
	var customer struct{ ID string }
	r.JSON(t, &customer)
	// Read-only from the next connection on; the service's pool drops
	// the ones it holds, as a failover ends them.
	_, err := ro.Pool.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`)
	require.NoError(t, err)
	ro.Pool.Reset()

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/customers", map[string]any{"name": "Beta", "currency": "EUR"}},
		{"POST", "/v1/invoices", map[string]any{"customer_id": customer.ID}},
		{"PATCH", "/v1/customers/" + customer.ID, map[string]any{"name": "Acme AG"}},
		{"POST", "/v1/capabilities/create-customer/invoke", map[string]any{"input": map[string]any{"name": "Beta", "currency": "EUR"}}},
	} {
		r = ro.Do(t, c.method, c.path, token, c.body)
		what := c.method + " " + c.path
		require.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "%s: %s", what, r.Body)
		require.Equal(t, "UNAVAILABLE", r.Problem(t)["code"], what)
		require.Equal(t, "5", r.Header.Get("Retry-After"), what)
		requireNoInternals(t, what, r)
		require.NotContains(t, strings.ToLower(string(r.Body)), "read-only transaction", what)
	}
	require.Equal(t, http.StatusOK, ro.Do(t, "GET", "/v1/customers", token, nil).StatusCode, "reads are served")
	var names string
	require.NoError(t, ro.Pool.QueryRow(ctx, `SELECT string_agg(name, ',') FROM customers`).Scan(&names))
	require.Equal(t, "Acme", names, "nothing written")
	require.NoError(t, ro.Pool.QueryRow(ctx, `SELECT count(*)::text FROM invoices`).Scan(&names))
	require.Equal(t, "0", names)
}

// requireNoInternals fails when r's body names what failed inside: a
// driver message, the socket, the SQLSTATE. (The request id, random
// letters, is left out of the search.)
func requireNoInternals(t *testing.T, what string, r *apptest.Response) {
	t.Helper()
	body := strings.ToLower(strings.ReplaceAll(string(r.Body), r.Header.Get("X-Request-Id"), ""))
	for _, leak := range []string{"failed to connect", "dial", "sqlstate", "57p01", "terminating", "eof", ".s.pgsql",
		"conn closed", "broken pipe", "postgres", "invoiced-pg-"} {
		require.NotContains(t, body, leak, "%s leaks %q: %s", what, leak, r.Body)
	}
}
