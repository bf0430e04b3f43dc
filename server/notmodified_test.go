package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// TestIfNoneMatchAnswers304: a GET or HEAD whose If-None-Match names the
// ETag its 200 carries is answered 304 with the ETag and no body (RFC
// 9110 §13.1.2, §15.4.5), on any route, and logged as the 304 it was;
// everything else goes out as the handler wrote it.
func TestIfNoneMatchAnswers304(t *testing.T) {
	t.Parallel()
	for _, metrics := range []bool{false, true} {
		var logs lockedBuffer
		cfg := server.DefaultConfig()
		if metrics {
			cfg.Metrics = server.NewMetrics()
		}
		e := server.New(cfg, slog.New(slog.NewJSONHandler(&logs, nil)), func(context.Context) error { return nil })
		withETag := func(tag string, h echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				c.Response().Header().Set("ETag", tag)
				return h(c)
			}
		}
		ok := func(c echo.Context) error { return c.JSON(http.StatusOK, thing{Name: "a", Count: 3}) }
		e.Match([]string{http.MethodGet, http.MethodHead}, "/thing", withETag(`"3"`, ok))
		e.GET("/weak", withETag(`W/"3"`, ok))
		e.GET("/plain", ok)
		e.GET("/refused", withETag(`"3"`, func(echo.Context) error { return problem.NotFound("thing") }))
		e.GET("/created", withETag(`"3"`, func(c echo.Context) error { return c.JSON(http.StatusCreated, thing{}) }))
		e.POST("/thing", withETag(`"3"`, ok))
		e.GET("/stream", withETag(`"3"`, func(c echo.Context) error {
			c.Response().Header().Set(echo.HeaderContentType, "text/event-stream")
			c.Response().WriteHeader(http.StatusOK)
			_, _ = c.Response().Write([]byte("data: 1\n\n"))
			c.Response().Flush()
			return nil
		}))
		srv := httptest.NewServer(e)
		for _, tc := range []struct {
			method, path string
			inm          []string // If-None-Match field lines
			status       int
		}{
			{"GET", "/thing", []string{`"3"`}, 304},
			{"HEAD", "/thing", []string{`"3"`}, 304},
			{"GET", "/thing", []string{`W/"3"`}, 304}, // weak comparison
			{"GET", "/thing", []string{`*`}, 304},
			{"GET", "/thing", []string{`"1", "3"`}, 304},
			{"GET", "/thing", []string{`"1"`, `"3"`}, 304},
			{"GET", "/weak", []string{`"3"`}, 304},
			{"GET", "/thing", []string{`"2"`}, 200},
			{"HEAD", "/thing", []string{`"2"`}, 200},
			{"GET", "/thing", []string{`3`}, 200}, // no tag: names nothing
			{"GET", "/thing", nil, 200},
			{"GET", "/plain", []string{`*`}, 200}, // no ETag, nothing to match
			{"GET", "/refused", []string{`"3"`}, 404},
			{"GET", "/created", []string{`"3"`}, 201},
			{"POST", "/thing", []string{`"3"`}, 200},
			{"GET", "/stream", []string{`"2"`}, 200}, // flushes through the middleware
		} {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			require.NoError(t, err)
			for _, l := range tc.inm {
				req.Header.Add("If-None-Match", l)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			what := tc.method + " " + tc.path + " If-None-Match " + resp.Request.Header.Get("If-None-Match")
			require.Equal(t, tc.status, resp.StatusCode, what)
			if tc.status == http.StatusNotModified {
				require.Empty(t, body, what)
				require.NotEmpty(t, resp.Header.Get("ETag"), "%s: a 304 carries the ETag", what)
				require.Empty(t, resp.Header.Get("Content-Type"), "%s: a 304 describes no body", what)
			} else if tc.method == http.MethodGet {
				require.NotEmpty(t, body, what)
			}
			line := logs.requestLines(t)[resp.Header.Get(echo.HeaderXRequestID)]
			require.NotNil(t, line, what)
			require.EqualValues(t, tc.status, line["status"], "metrics %v: %s", metrics, what)
			if tc.status == http.StatusNotModified {
				require.EqualValues(t, 0, line["bytes"], "metrics %v: %s", metrics, what)
			}
		}
		srv.Close()
	}
}
