package idempotency_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/invoiced/invoiced/idempotency"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// A handler that panics must not leave its key claimed: the retry runs
// (and here succeeds) instead of finding the key in use for the lease.
func TestPanickingHandlerReleasesItsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := storetest.Tx(t)
	u, err := identity.UserCreate(ctx, tx, identity.UserCreateParams{Username: "pat", Role: identity.RoleClerk})
	require.NoError(t, err)
	tok, err := identity.TokenCreate(ctx, tx, u.ID, "test")
	require.NoError(t, err)

	var calls atomic.Int32
	e := server.New(server.DefaultConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context) error { return nil })
	g := e.Group("/v1", identity.Authenticate(tx, nil, nil), idempotency.Middleware(tx))
	g.POST("/flaky", func(c echo.Context) error {
		if calls.Add(1) == 1 {
			panic("the first call breaks")
		}
		return c.JSON(http.StatusCreated, map[string]string{"ok": "yes"})
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	post := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/flaky", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(idempotency.HeaderKey, "k-panic")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post()
	require.Equal(t, http.StatusInternalServerError, status, body)
	require.NotContains(t, body, "the first call breaks", "no panic text reaches the client")
	status, body = post()
	require.Equal(t, http.StatusCreated, status, "the retry runs: %s", body)
	status, _ = post()
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, int32(2), calls.Load(), "the success is replayed, not run again")
}
