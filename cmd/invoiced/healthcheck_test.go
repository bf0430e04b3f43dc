package main

import (
	"context"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// The compose healthcheck: 1 while nothing serves, 0 once serve is ready.
func TestHealthcheckSaysWhetherTheLocalServerIsReady(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := env{"DATABASE_URL": storetest.URL(t), "INVOICED_ADDR": addr}
	r := invoke(context.Background(), e, "healthcheck")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "not ready")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- invoke(ctx, e, "serve") }()
	defer func() {
		cancel()
		<-done
	}()
	require.Eventually(t, func() bool {
		return invoke(context.Background(), e, "healthcheck").code == 0
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, "ready\n", invoke(context.Background(), e, "healthcheck").stdout)
}
