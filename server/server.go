// Package server builds the Echo instance every route runs in: the error
// handler that writes RFC 9457 problems, request ids, JSON access logs,
// panic recovery, the body limit, 304 to a matching If-None-Match, health
// and readiness, and the HTTP server with its timeouts. It knows no
// feature package; cmd/invoiced mounts routes.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Config holds HTTP settings.
type Config struct {
	// Addr is the listen address (INVOICED_ADDR, default ":8080").
	Addr string
	// BodyLimit caps request bodies ("1M" is 1,000,000 bytes, "1MiB"
	// 1,048,576); 1 MB fits 1,000 invoice lines of 900 characters each.
	BodyLimit string
	// ReadTimeout, WriteTimeout and IdleTimeout bound slow clients.
	// WriteTimeout is 0 (none) because SSE and long polls stream for
	// minutes; their handlers bound themselves.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// TrustProxyHeaders makes the client IP come from X-Forwarded-For (set
	// it only behind a proxy that overwrites the header); otherwise it is
	// the TCP peer, so a client cannot fake it to dodge per-IP limits.
	TrustProxyHeaders bool
	// Metrics, when set, records every request; Metrics.Handler serves
	// them on a listener of their own, never on this one.
	Metrics *Metrics
}

// DefaultConfig returns the defaults documented in docs/operating.md.
func DefaultConfig() Config {
	return Config{Addr: ":8080", BodyLimit: "1M", ReadTimeout: 15 * time.Second, IdleTimeout: 120 * time.Second}
}

// New returns an Echo instance with the shared middleware and error
// handler, and /healthz and /readyz mounted. ready reports whether the
// database is reachable and the schema current.
func New(cfg Config, log *slog.Logger, ready func(context.Context) error) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = ErrorHandler(log)
	e.IPExtractor = echo.ExtractIPDirect()
	if cfg.TrustProxyHeaders {
		e.IPExtractor = echo.ExtractIPFromXFFHeader()
	}
	e.Server.ReadTimeout = cfg.ReadTimeout
	e.Server.ReadHeaderTimeout = cfg.ReadTimeout
	e.Server.WriteTimeout = cfg.WriteTimeout
	e.Server.IdleTimeout = cfg.IdleTimeout

	e.Use(middleware.RequestID())
	e.Use(accessLog(log))
	e.Use(ignoreContent)
	if cfg.Metrics != nil {
		// Outside Recover, so a panic is counted as the 500 it becomes.
		e.Use(cfg.Metrics.Middleware())
	}
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		// The stack goes to the log, never to the client.
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic", "request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err, "stack", string(stack))
			return err
		},
	}))
	if cfg.BodyLimit != "" {
		e.Use(bodyLimit(cfg.BodyLimit))
	}
	e.Use(notModified)

	// HEAD as GET without the body (RFC 9110 §9.3.2), as every GET route.
	getHead := []string{http.MethodGet, http.MethodHead}
	e.Match(getHead, "/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.Match(getHead, "/readyz", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			return unavailable(err)
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	})
	return e
}

func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURIPath: true, LogMethod: true, LogLatency: true, LogRequestID: true,
		LogRemoteIP: true, LogResponseSize: true,
		// The error handler writes the problem before the line is logged,
		// so the line holds the status and size sent; left to Echo's outer
		// call, a returned problem would log the 200 the response still
		// held then.
		HandleError: true,
		// Only the path is logged: query strings may carry cursors and
		// nothing that authenticates ever travels in a URL.
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request",
				slog.String("request_id", v.RequestID),
				slog.String("method", v.Method),
				slog.String("path", v.URIPath),
				slog.Int("status", v.Status),
				slog.Int64("bytes", v.ResponseSize),
				slog.Duration("latency", v.Latency),
				slog.String("remote_ip", v.RemoteIP),
			)
			return nil
		},
	})
}

// Serve runs e on l until ctx is cancelled, then shuts down gracefully,
// giving in-flight requests up to grace to finish. The caller opens l, so
// that an address it cannot have is refused before anything else starts.
func Serve(ctx context.Context, e *echo.Echo, l net.Listener, grace time.Duration) error {
	e.Listener = l
	errc := make(chan error, 1)
	go func() { errc <- e.Start(l.Addr().String()) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := e.Shutdown(shutCtx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// contentIgnored says whether a request's content has no defined
// semantics (RFC 9110 §9.3.1, §9.3.2, §9.3.7): GET, HEAD and OPTIONS.
// Such content is neither read nor judged, so it cannot make a request
// malformed, too large or of the wrong media type.
func contentIgnored(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// ignoreContent hides the body of a request whose content is ignored from
// everything after it. ContentLength keeps the length sent: net/http
// drains an unread body of a declared length before the response's
// headers go out, while the connection's reader is still the request's.
func ignoreContent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := c.Request(); contentIgnored(r.Method) {
			r.Body = http.NoBody
		}
		return next(c)
	}
}

// bodyLimit is Echo's body limit whose 413, whether the declared length
// or the bytes read went over, names the limit and the setting that
// raises it: a chat resends its whole conversation, so a client needs to
// know why a long one stopped.
func bodyLimit(limit string) echo.MiddlewareFunc {
	mw := middleware.BodyLimit(limit)
	tooLarge := problem.New(http.StatusRequestEntityTooLarge, problem.CodeBodyTooLarge,
		fmt.Sprintf("the request body is larger than the %s this server accepts (INVOICED_BODY_LIMIT)", limit))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		h := mw(next)
		return func(c echo.Context) error {
			if contentIgnored(c.Request().Method) {
				return next(c) // its declared length is not a body read
			}
			err := h(c)
			var he *echo.HTTPError
			if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
				return tooLarge
			}
			return err
		}
	}
}
