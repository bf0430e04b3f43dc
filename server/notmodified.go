package server

import (
	"net/http"

	"github.com/invoiced/invoiced/etag"
	"github.com/labstack/echo/v4"
)

// notModified answers 304 Not Modified to a GET or HEAD whose
// If-None-Match names the ETag of the 200 its handler answers (RFC 9110
// §13.1.2, weak comparison, "*" and lists as etag.NoneMatch reads them),
// so every route that sends an ETag honours it without code of its own.
// The 304 keeps the ETag and the other headers a cache updates from, and
// drops the body and the headers that describe it (§15.4.5). Any other
// status (a 404, a refusal) goes out as the handler wrote it: a
// precondition is evaluated only where the answer would be 2xx (§13.2.1).
func notModified(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if (r.Method != http.MethodGet && r.Method != http.MethodHead) || len(r.Header.Values("If-None-Match")) == 0 {
			return next(c)
		}
		res := c.Response()
		w := &bodyDropper{ResponseWriter: res.Writer}
		res.Writer = w
		res.Before(func() {
			if res.Status != http.StatusOK || !etag.NoneMatch(r.Header, res.Header().Get("ETag")) {
				return
			}
			res.Status = http.StatusNotModified
			for _, h := range []string{echo.HeaderContentType, echo.HeaderContentLength, echo.HeaderContentEncoding, "Content-Disposition"} {
				res.Header().Del(h)
			}
			w.drop = true
		})
		err := next(c)
		if w.drop {
			res.Size = 0 // the access log's bytes are those sent
		}
		return err
	}
}

// bodyDropper swallows the body of a response turned into a 304, which
// has none: net/http would refuse each write with an error the handler
// would return as its own.
type bodyDropper struct {
	http.ResponseWriter
	drop bool
}

func (w *bodyDropper) Write(b []byte) (int, error) {
	if w.drop {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer, to
// flush an event stream.
func (w *bodyDropper) Unwrap() http.ResponseWriter { return w.ResponseWriter }
