package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// Metrics (per-route counts, pool sizes) are for operators: never on the
// public API port; on INVOICED_METRICS_ADDR when it is set, else nowhere.
func TestServeMetricsOnlyOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	dbURL := storetest.URL(t)
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	serve := func(e env) func() {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan result, 1)
		go func() { done <- invoke(ctx, e, "serve") }()
		waitServeReady(t, e["INVOICED_ADDR"])
		return func() {
			cancel()
			select {
			case r := <-done:
				require.Equal(t, 0, r.code, r.stderr)
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
		}
	}

	// By default: not served at all.
	api := freeAddr(t)
	stop := serve(env{"DATABASE_URL": dbURL, "INVOICED_ADDR": api})
	status, _ := get("http://" + api + "/metrics")
	require.Equal(t, http.StatusNotFound, status)
	stop()

	// With INVOICED_METRICS_ADDR: there, and still not on the API port.
	api, metrics := freeAddr(t), freeAddr(t)
	stop = serve(env{"DATABASE_URL": dbURL, "INVOICED_ADDR": api, "INVOICED_METRICS_ADDR": metrics})
	defer stop()
	status, _ = get("http://" + api + "/healthz")
	require.Equal(t, http.StatusOK, status)
	status, _ = get("http://" + api + "/metrics")
	require.Equal(t, http.StatusNotFound, status)
	status, body := get("http://" + metrics + "/metrics")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `invoiced_http_requests_total{method="GET",route="/healthz",status="200"} 1`)
	require.Contains(t, body, "invoiced_db_pool_max_conns")
	status, _ = get("http://" + metrics + "/v1/me")
	require.Equal(t, http.StatusNotFound, status, "the metrics listener serves nothing else")
}

func TestServeRefusesBadMetricsAddrNamingIt(t *testing.T) {
	t.Parallel()
	dbURL := storetest.URL(t)
	for _, e := range []env{
		{"DATABASE_URL": dbURL, "INVOICED_METRICS_ADDR": "9090"},
		{"DATABASE_URL": dbURL, "INVOICED_METRICS_ADDR": "127.0.0.1:99999"},
		{"DATABASE_URL": dbURL, "INVOICED_ADDR": ":8080", "INVOICED_METRICS_ADDR": ":8080"},
	} {
		r := invoke(context.Background(), e, "serve")
		require.Equal(t, 1, r.code, r.stderr)
		require.Contains(t, r.stderr, "INVOICED_METRICS_ADDR", "%v", e)
	}
}
