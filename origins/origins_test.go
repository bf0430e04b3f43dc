package origins_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/invoiced/invoiced/origins"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// The setting takes origins as a browser sends them, whatever the case or
// a default port, and refuses what is not one, saying what to write.
func TestParse(t *testing.T) {
	t.Parallel()
	a, err := origins.Parse(" HTTPS://App.Example.com:443, http://localhost:6274\thttp://[::1]:8080,https://app.example.com/ ")
	require.NoError(t, err)
	require.Equal(t, "https://app.example.com,http://localhost:6274,http://[::1]:8080", a.String())
	empty, err := origins.Parse("")
	require.NoError(t, err)
	require.Empty(t, empty.String())
	for _, bad := range []string{"*", "app.example.com", "ftp://app.example.com", "https://app.example.com/mcp",
		"https://user@app.example.com", "https://app.example.com?x=1", "https://app.example.com:99999", "null", "https://"} {
		_, err := origins.Parse("https://ok.example," + bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "is not an origin", bad)
	}
}

// No Origin (not a browser's cross-origin request), the service's own
// origin and the listed ones pass; any other, "null" included, does not.
func TestAllows(t *testing.T) {
	t.Parallel()
	a, err := origins.Parse("https://app.example.com,http://localhost:6274")
	require.NoError(t, err)
	for _, tc := range []struct {
		host, origin string
		want         bool
	}{
		{"invoices.example.com", "", true},
		{"invoices.example.com", "https://invoices.example.com", true},
		{"invoices.example.com", "https://INVOICES.example.com", true},
		{"127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"invoices.example.com", "https://app.example.com", true},
		{"invoices.example.com", "https://app.example.com:443", true},
		{"invoices.example.com", "http://localhost:6274", true},
		{"invoices.example.com", "http://localhost:6275", false},
		{"invoices.example.com", "http://app.example.com", false},
		{"invoices.example.com", "https://evil.example", false},
		{"invoices.example.com", "https://invoices.example.com.evil.example", false},
		{"127.0.0.1:8080", "http://127.0.0.1:8081", false},
		{"invoices.example.com", "null", false},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://"+tc.host+"/mcp", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		require.Equal(t, tc.want, a.Allows(r), "%s from %s", tc.host, tc.origin)
	}
}

// Mounted with e.Use, the middleware gives a preflight the CORS headers
// with Echo's own answer to OPTIONS (no route middleware runs), gives an
// allowed origin's request the CORS headers, and refuses another origin
// with 403 (problem+json unless the endpoint answers its own way), its
// handler never reached.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	a, err := origins.Parse("https://app.example.com")
	require.NoError(t, err)
	e := echo.New()
	e.HTTPErrorHandler = server.ErrorHandler(slog.New(slog.DiscardHandler))
	reached := 0
	handler := func(c echo.Context) error { reached++; return c.String(http.StatusOK, "ok") }
	cors := a.Middleware(origins.CORS{Methods: []string{http.MethodGet, http.MethodPost}, Headers: []string{"Authorization", "X-One"}, Expose: []string{"X-Two"}})
	e.Use(cors)
	routeMiddleware := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { reached += 100; return next(c) }
	}
	e.Match([]string{http.MethodGet, http.MethodPost}, "/x", handler, routeMiddleware)
	do := func(method, origin string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://svc.example/x", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		for i := 0; i < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		return w
	}

	w := do(http.MethodOptions, "https://app.example.com", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization")
	require.Equal(t, http.StatusNoContent, w.Code)
	require.Equal(t, "https://app.example.com", w.Header().Get("Access-Control-Allow-Origin"))
	require.Equal(t, "GET, POST", w.Header().Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Authorization, X-One", w.Header().Get("Access-Control-Allow-Headers"))
	require.Equal(t, "7200", w.Header().Get("Access-Control-Max-Age"))
	require.Contains(t, w.Header().Values("Vary"), "Origin")
	require.Equal(t, "OPTIONS, GET, POST", w.Header().Get("Allow"))
	require.Zero(t, reached)

	w = do(http.MethodPost, "https://app.example.com")
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "https://app.example.com", w.Header().Get("Access-Control-Allow-Origin"))
	require.Equal(t, "X-Two", w.Header().Get("Access-Control-Expose-Headers"))
	require.Equal(t, 101, reached)

	w = do(http.MethodPost, "")
	require.Equal(t, http.StatusOK, w.Code)
	require.Empty(t, w.Header().Get("Access-Control-Allow-Origin"))
	require.Equal(t, 202, reached)

	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodOptions} {
		w = do(method, "https://evil.example", "Access-Control-Request-Method", "POST")
		require.Equal(t, http.StatusForbidden, w.Code, method)
		require.Equal(t, "application/problem+json", w.Header().Get("Content-Type"), method)
		require.Contains(t, w.Body.String(), `"code":"FORBIDDEN"`, method)
		require.Contains(t, w.Body.String(), origins.Setting, method)
		require.Empty(t, w.Header().Get("Access-Control-Allow-Origin"), method)
	}
	require.Equal(t, 202, reached, "a refused origin reaches neither route middleware nor handler")
}
