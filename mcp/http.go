package mcp

import (
	"context"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/origins"
	"github.com/labstack/echo/v4"
)

// DefaultWriteTimeout bounds one write to an MCP client, as
// steploop.WriteTimeout does for the chat stream: long enough for any
// client that reads, short enough that one that does not lets go of its
// resources soon.
const DefaultWriteTimeout = 30 * time.Second

// BoundWrites is route middleware for /mcp: every write to the client
// must finish within WriteTimeout. The SDK writes a session's
// notifications to its GET stream from the sender's goroutine, and a
// client that stops reading while keeping its connection open (its
// socket buffer full) would hold that goroutine, the SDK's handler and
// the connection until TCP gives up, which for a live peer that
// advertises a zero window is never. A write past its deadline fails;
// net/http then cancels the request, the SDK's handler returns and the
// connection closes, and the client reconnects as after any dropped
// stream (ADR-0015).
func (s *Service) BoundWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		w := &boundWriter{ResponseWriter: res.Writer, rc: http.NewResponseController(res.Writer), timeout: s.cfg.WriteTimeout}
		res.Writer = w
		// net/http writes the response's end after the handler returns,
		// under this deadline, and clears it before the connection's
		// next request.
		defer w.deadline()
		return next(c)
	}
}

// boundWriter sets the connection's write deadline before each write and
// flush; a deadline is a timer in the runtime's poller, not a system call.
type boundWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *boundWriter) Write(p []byte) (int, error) {
	w.deadline()
	return w.ResponseWriter.Write(p)
}

func (w *boundWriter) FlushError() error {
	w.deadline()
	return w.rc.Flush()
}

func (w *boundWriter) Flush() { _ = w.FlushError() }

func (w *boundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *boundWriter) deadline() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

// RecheckStreams is route middleware for /mcp: an open GET stream (where
// notifications arrive) re-checks its credential every heartbeat and ends
// once it no longer authenticates the same principal (ADR-0011 #20).
func (s *Service) RecheckStreams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodGet {
			return next(c)
		}
		ctx, cancel := context.WithCancel(c.Request().Context())
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		go func() {
			t := time.NewTicker(s.cfg.Heartbeat)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if err := identity.Recheck(ctx); err != nil {
						cancel()
						return
					}
				}
			}
		}()
		return next(c)
	}
}

// CORS is what pages of the allowed origins (origins.Allowed) may do at
// /mcp: the transport's methods and request headers, reading
// Mcp-Session-Id (a page must send it back) and WWW-Authenticate (a 401's
// challenge says where to sign in). An origin not allowed is refused with
// 403 and a JSON-RPC error, as the transport's other refusals are.
func CORS() origins.CORS {
	return origins.CORS{
		Methods: []string{http.MethodGet, http.MethodPost, http.MethodDelete},
		Headers: []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID"},
		Expose:  []string{"Mcp-Session-Id", "WWW-Authenticate"},
		Refuse: func(c echo.Context) error {
			writeError(c.Response(), http.StatusForbidden, nil, codeTransport,
				"Forbidden: pages of this origin may not call /mcp (an admin lists browser clients' origins in "+origins.Setting+")")
			return nil
		},
	}
}
