package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/invoiced/invoiced/server"
	"github.com/stretchr/testify/require"
)

// Any client, signed in or not, may send made-up methods: they share one
// "other" label instead of minting a time series each.
func TestMetricsMethodLabelIsBounded(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := server.DefaultConfig()
	cfg.Metrics = server.NewMetrics()
	e := server.New(cfg, log, func(context.Context) error { return nil })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	for i := range 50 {
		req, err := http.NewRequest(fmt.Sprintf("X%05d", i), srv.URL+"/healthz", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	msrv := httptest.NewServer(cfg.Metrics.Handler())
	t.Cleanup(msrv.Close)
	resp, err := http.Get(msrv.URL + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	methods := map[string]bool{}
	for _, m := range regexp.MustCompile(`invoiced_http_requests_total\{method="([^"]+)"`).FindAllStringSubmatch(string(b), -1) {
		methods[m[1]] = true
	}
	require.Equal(t, map[string]bool{"other": true}, methods, "method label values are client-controlled")
}
