package openapitest

// What the checker wraps around a request and its response: the body read
// once and replayed to the handler, and a recorder that keeps the answer
// for validation while passing it through (flushes included, for streams).

import (
	"bytes"
	"io"
	"net/http"
)

func readAll(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(req.Body)
	return buf.Bytes(), err
}

type bodyReader struct{ *bytes.Reader }

func (bodyReader) Close() error { return nil }

func readCloser(b []byte) bodyReader { return bodyReader{bytes.NewReader(b)} }

// replay is a request body read once already: its bytes, then the error
// that ended the first read (a client that stalled or hung up), if any.
type replay struct {
	*bytes.Reader
	err error
}

func (r *replay) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	if err == io.EOF && r.err != nil {
		return n, r.err
	}
	return n, err
}

func (*replay) Close() error { return nil }

// recorder passes the response through unchanged (flushes included, for
// event streams) and keeps its status and a copy of its body.
type recorder struct {
	http.ResponseWriter
	status  int
	written bool
	body    bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if !r.written {
		r.status, r.written = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.written = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Flush sends what is buffered, as the event streams need.
func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
