package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

type thing struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

func setup(t *testing.T) *httptest.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := server.DefaultConfig()
	cfg.BodyLimit = "1K"
	e := server.New(cfg, log, func(context.Context) error { return nil })
	e.POST("/things", func(c echo.Context) error {
		var v thing
		if err := server.DecodeJSON(c, &v); err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, v)
	})
	e.GET("/panic", func(c echo.Context) error { panic("secret internal detail") })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

func problemOf(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	require.Equal(t, server.ProblemContentType, resp.Header.Get("Content-Type"))
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	require.EqualValues(t, resp.StatusCode, m["status"])
	require.NotEmpty(t, m["request_id"], "problems carry the request id")
	return m
}

func TestEveryErrorIsAProblem(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown route", "GET", "/nope", "", 404, "NOT_FOUND"},
		{"wrong method", "DELETE", "/things", "", 405, "METHOD_NOT_ALLOWED"},
		{"malformed json", "POST", "/things", `{"name": "x"`, 400, "MALFORMED_JSON"},
		{"empty body", "POST", "/things", ``, 400, "MALFORMED_JSON"},
		{"trailing garbage", "POST", "/things", `{"name":"x"} {}`, 400, "MALFORMED_JSON"},
		{"unknown field", "POST", "/things", `{"name":"x","bogus":1}`, 422, "VALIDATION_FAILED"},
		{"wrong type", "POST", "/things", `{"count":"many"}`, 422, "VALIDATION_FAILED"},
		{"duplicate key", "POST", "/things", `{"name":"a","name":"b"}`, 422, "VALIDATION_FAILED"},
		{"body over limit", "POST", "/things", `{"name":"` + strings.Repeat("x", 2000) + `"}`, 413, "BODY_TOO_LARGE"},
		{"panic", "GET", "/panic", "", 500, "INTERNAL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode)
			p := problemOf(t, resp)
			require.Equal(t, tc.code, p["code"])
			raw, _ := json.Marshal(p)
			require.NotContains(t, string(raw), "secret internal detail", "no panic value or stack reaches the client")
			require.NotContains(t, string(raw), "goroutine")
		})
	}
}

func TestFieldErrorsNameTheField(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	resp, err := http.Post(srv.URL+"/things", "application/json", strings.NewReader(`{"count":"many"}`))
	require.NoError(t, err)
	p := problemOf(t, resp)
	errs := p["errors"].([]any)
	require.Equal(t, "count", errs[0].(map[string]any)["field"])
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

func TestMetricsCountRequestsByRoutePattern(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := server.DefaultConfig()
	cfg.Metrics = server.NewMetrics()
	e := server.New(cfg, log, func(context.Context) error { return nil })
	e.GET("/things/:id", func(c echo.Context) error { return c.NoContent(204) })
	e.GET("/boom", func(c echo.Context) error { panic("x") })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	for _, p := range []string{"/things/1", "/things/2", "/boom"} {
		resp, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
	}
	// Never on the API's own listener: on the metrics handler's.
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	msrv := httptest.NewServer(cfg.Metrics.Handler())
	t.Cleanup(msrv.Close)
	resp, err = http.Get(msrv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(body), `invoiced_http_requests_total{method="GET",route="/things/:id",status="204"} 2`)
	require.Contains(t, string(body), `invoiced_http_requests_total{method="GET",route="/boom",status="500"} 1`)
}

func TestClientIPIgnoresForwardedHeadersUnlessTrusted(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{false, true} {
		cfg := server.DefaultConfig()
		cfg.TrustProxyHeaders = trust
		e := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context) error { return nil })
		e.GET("/ip", func(c echo.Context) error { return c.String(200, c.RealIP()) })
		srv := httptest.NewServer(e)
		req, _ := http.NewRequest("GET", srv.URL+"/ip", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if trust {
			require.Equal(t, "203.0.113.9", string(b))
		} else {
			require.Equal(t, "127.0.0.1", string(b), "a client cannot choose its own IP")
		}
	}
}

// A body over the limit is 413 naming the limit and its setting, whether
// its declared length says so or the bytes read do (a chunked body).
func TestBodyOverTheLimitNamesIt(t *testing.T) {
	t.Parallel()
	srv := setup(t)
	body := `{"name":"` + strings.Repeat("x", 2000) + `"}`
	for name, r := range map[string]io.Reader{
		"declared length": strings.NewReader(body),
		"chunked":         io.MultiReader(strings.NewReader(body)), // no length known
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/things", r)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, name)
		p := problemOf(t, resp)
		require.Equal(t, "BODY_TOO_LARGE", p["code"], name)
		require.Contains(t, p["detail"], "INVOICED_BODY_LIMIT", name)
	}
}
