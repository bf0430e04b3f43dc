package server_test

import (
	"context"
	"encoding/json"
	"io"
	stdlog "log"
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
		{"null body", "POST", "/things", `null`, 422, "VALIDATION_FAILED"},
		{"null body, spaced", "POST", "/things", " null\n", 422, "VALIDATION_FAILED"},
		{"array body", "POST", "/things", `[]`, 422, "VALIDATION_FAILED"},
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

// A GET's body is never read: malformed, over the limit or of another
// media type, the route answers as it does without one. Other methods
// still read theirs.
func TestGetBodiesAreIgnored(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := server.DefaultConfig()
	cfg.BodyLimit = "1K"
	e := server.New(cfg, log, func(context.Context) error { return nil })
	read := func(c echo.Context) error {
		raw, err := server.ReadBody(c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]int{"read": len(raw)})
	}
	e.GET("/read", read)
	e.POST("/read", read)
	srv := httptest.NewUnstartedServer(e)
	var serverLog lockedBuffer // net/http's own: a panic serving a connection
	srv.Config.ErrorLog = stdlog.New(&serverLog, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	do := func(method, body, contentType string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+"/read", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	big := `{"name":"` + strings.Repeat("x", 2000) + `"}`
	// Rounds of ignored bodies and read ones on the same kept-alive
	// connections: a body left unread past the response would be drained
	// after the connection's next read began.
	for range 20 {
		for _, tc := range []struct{ name, body, contentType string }{
			{"malformed", `{"name":`, "application/json"},
			{"over the limit", big, "application/json"},
			{"not JSON", "name=x", "application/x-www-form-urlencoded"},
		} {
			status, body := do(http.MethodGet, tc.body, tc.contentType)
			require.Equal(t, http.StatusOK, status, tc.name)
			require.JSONEq(t, `{"read":0}`, body, tc.name)
		}
		status, _ := do(http.MethodPost, big, "application/json")
		require.Equal(t, http.StatusRequestEntityTooLarge, status, "a POST's body is still read and limited")
		status, _ = do(http.MethodPost, "name=x", "application/x-www-form-urlencoded")
		require.Equal(t, http.StatusUnsupportedMediaType, status)
		status, body := do(http.MethodPost, `{"name":"x"}`, "application/json")
		require.Equal(t, http.StatusOK, status)
		require.JSONEq(t, `{"read":12}`, body)
	}
	srv.Close()
	serverLog.mu.Lock()
	defer serverLog.mu.Unlock()
	require.Empty(t, serverLog.b.String(), "net/http logged a failure serving a connection")
}
