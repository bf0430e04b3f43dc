package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a log sink the server's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// requestLines returns the access log's lines by request id.
func (l *lockedBuffer) requestLines(t *testing.T) map[string]map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		if m["msg"] == "request" {
			out[m["request_id"].(string)] = m
		}
	}
	return out
}

// The access log holds the status and size each response was sent with,
// a problem's included, with metrics off as with them on (the metrics
// middleware handles errors itself, so only the other order showed it).
func TestAccessLogRecordsTheStatusSent(t *testing.T) {
	t.Parallel()
	for _, metrics := range []bool{false, true} {
		var logs lockedBuffer
		cfg := server.DefaultConfig()
		cfg.BodyLimit = "1K"
		if metrics {
			cfg.Metrics = server.NewMetrics()
		}
		e := server.New(cfg, slog.New(slog.NewJSONHandler(&logs, nil)), func(context.Context) error { return nil })
		e.GET("/ok", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]bool{"ok": true}) })
		e.GET("/refused", func(c echo.Context) error { return problem.Invalid("name", "is required") })
		e.GET("/conflict", func(c echo.Context) error { return problem.Conflict("SOMETHING", "it changed") })
		e.GET("/panic", func(c echo.Context) error { panic("boom") })
		e.POST("/things", func(c echo.Context) error {
			var v thing
			if err := server.DecodeJSON(c, &v); err != nil {
				return err
			}
			return c.JSON(http.StatusCreated, v)
		})
		srv := httptest.NewServer(e)
		for _, tc := range []struct {
			method, path, body string
			status             int
		}{
			{"GET", "/ok", "", 200},
			{"GET", "/refused", "", 422},
			{"GET", "/conflict", "", 409},
			{"GET", "/panic", "", 500},
			{"GET", "/nowhere", "", 404},
			{"DELETE", "/ok", "", 405},
			{"POST", "/things", `{"name":`, 400},
			{"POST", "/things", `{"name":"` + strings.Repeat("x", 2000) + `"}`, 413},
		} {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode, "%s %s", tc.method, tc.path)

			line := logs.requestLines(t)[resp.Header.Get(echo.HeaderXRequestID)]
			require.NotNil(t, line, "%s %s: no access log line", tc.method, tc.path)
			require.EqualValues(t, tc.status, line["status"], "metrics %v: %s %s logged another status than it sent", metrics, tc.method, tc.path)
			require.EqualValues(t, len(body), line["bytes"], "metrics %v: %s %s", metrics, tc.method, tc.path)
		}
		srv.Close()
	}
}
