package steploop

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// HeaderStream is the header that marks a UI message stream response; ai@7
// clients check it.
const HeaderStream = "x-vercel-ai-ui-message-stream"

// FlushDelay is how long a written chunk may wait in the buffer for the
// next one before it is sent on its own. The loop asks for a flush before
// it waits on the model or a tool and after each text delta; when the
// wait ends sooner, as a primary-key lookup or a fast model does, the
// chunks that follow go out in the same write. 10 ms is a tenth of the
// delay a reader notices in a streaming answer, and it lets a chat that
// completes inside it (the usual case for a read tool) leave in one
// write with the response's end: on a loopback every write costs the
// writer and the reader each a wake-up, which `make bench-chat` shows is
// most of a chat's CPU. Each flush is also one statement appending to the
// run's log, so a chat that completes inside it adds none.
const FlushDelay = 10 * time.Millisecond

// batchLog is where a run's batches go before its client sees them (the
// run log): a reader on any replica replays exactly what a client got.
type batchLog interface {
	// append stores one batch (a failure is logged, and the client is
	// sent the batch all the same); the run's client is sent it afterwards.
	append(batch []byte)
}

// sse writes UI message stream v1 chunks as Server-Sent Events. Chunks are
// buffered; flushSoon sends them FlushDelay later unless the run has
// ended by then, and what is left when it ends goes out with its final
// write. A batch is appended to the run log before it is written to the
// client, so no client ever holds bytes the log lacks. After the first
// failed write (the client went away or stopped reading) the client is
// written no more; the run goes on and the log gets every batch.
//
// The timer's flush runs on its own goroutine: mu guards the buffer;
// logging orders the batches into the log and writing orders them to the
// client, taken hand over hand, so a batch is logged while the one before
// it is still being written to a slow client.
type sse struct {
	mu     sync.Mutex
	buf    []byte // written and not yet logged nor sent
	armed  bool   // a timed flush is due
	closed bool   // the run has ended: w is no longer ours
	timer  *time.Timer
	delay  time.Duration // FlushDelay; tests set their own

	logging sync.Mutex
	writing sync.Mutex
	log     batchLog // nil: the stream is not logged
	w       http.ResponseWriter
	f       http.Flusher
	err     error // the client's first failed write
	rc      *http.ResponseController
	// writeTimeout bounds each write to the client (WriteTimeout).
	writeTimeout time.Duration
}

// WriteTimeout bounds one write of the chat stream: a client that stops
// reading while keeping its connection open (its socket buffer full) is
// written no more after it, instead of holding the goroutine that sends
// the run's batches and, at the run's end, graceful shutdown, until TCP
// gives up. The server has no write timeout of its own, since streams and
// long polls outlast any single one.
const WriteTimeout = 30 * time.Second

// streamHeaders sends the headers of a UI message stream.
func streamHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer a stream
	h.Set(HeaderStream, "v1")
	w.WriteHeader(http.StatusOK)
}

func newSSE(w http.ResponseWriter) *sse {
	streamHeaders(w)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f, delay: FlushDelay, rc: http.NewResponseController(w), writeTimeout: WriteTimeout}
}

// chunk is one UIMessageChunk; the map keeps each chunk's members exactly
// those ai@7 declares for its type.
type chunk map[string]any

// frame is c as one SSE event: the bytes encoding/json writes for c, with
// the strings and booleans that make up most of a stream written here. A
// chat sends about a dozen chunks, and encoding each map by reflection was
// 7 % of the server's CPU in `make bench-chat`; FuzzFrame holds the two
// encodings to the same bytes.
func frame(c chunk) []byte {
	b, err := appendChunk(append(make([]byte, 0, 96), "data: "...), c)
	if err != nil {
		b, _ = appendChunk([]byte("data: "), chunk{"type": "error", "errorText": "the server could not encode a chunk"})
	}
	return append(b, '\n', '\n')
}

// appendChunk appends c as a JSON object, its members in encoding/json's
// order (sorted by name).
func appendChunk(b []byte, c chunk) ([]byte, error) {
	var names [8]string
	keys := names[:0]
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, c[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendValue appends v as encoding/json writes it.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// appendString appends s as a JSON string. Printable ASCII other than the
// characters encoding/json escapes (the quote, the backslash and, for HTML,
// <, > and &) is written as it is; anything else is left to encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// doneFrame ends every stream.
var doneFrame = []byte("data: [DONE]\n\n")

func (s *sse) send(c chunk) { s.write(frame(c)) }

func (s *sse) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.buf = append(s.buf, b...)
	}
}

// clientOnly writes b to the client alone, ahead of everything buffered:
// the start chunk of a run, which the log holds in its head instead.
func (s *sse) clientOnly(b []byte) {
	s.logging.Lock()
	s.writing.Lock()
	s.logging.Unlock()
	defer s.writing.Unlock()
	s.toClient(b, false)
}

// flushSoon sends what is buffered within FlushDelay: the loop calls it
// before a wait the client should see the stream's progress during.
func (s *sse) flushSoon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.buf) == 0 || s.armed {
		return
	}
	s.armed = true
	if s.timer == nil {
		s.timer = time.AfterFunc(s.delay, s.timedFlush)
	} else {
		s.timer.Reset(s.delay)
	}
}

func (s *sse) timedFlush() {
	s.logging.Lock()
	s.mu.Lock()
	s.armed = false
	b := s.take()
	closed := s.closed
	s.mu.Unlock()
	if closed || len(b) == 0 {
		s.logging.Unlock()
		return
	}
	if s.log != nil {
		s.log.append(b)
	}
	s.deliver(b, true)
}

// deliver writes a logged batch to the client in its turn; s.logging is
// held, and is released once the batch's turn to be written has come.
func (s *sse) deliver(b []byte, flush bool) {
	s.writing.Lock()
	s.logging.Unlock()
	defer s.writing.Unlock()
	s.toClient(b, flush)
}

// take empties the buffer; s.mu is held.
func (s *sse) take() []byte {
	b := s.buf
	s.buf = nil
	return b
}

// flushWith sends what is buffered through store, which logs it with
// another write of the run's (the mid-run save) in one statement, then to
// the client. A timed flush in progress finishes first.
func (s *sse) flushWith(store func(batch []byte) error) error {
	s.logging.Lock()
	s.mu.Lock()
	b := s.take()
	s.mu.Unlock()
	err := store(b)
	s.deliver(b, true)
	return err
}

// toClient writes b to the client, flushed or left for the next write;
// s.writing is held.
func (s *sse) toClient(b []byte, flush bool) {
	if s.err != nil || len(b) == 0 {
		return
	}
	s.deadline()
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	if !flush || s.f == nil {
		return
	}
	defer func() {
		// echo.Response panics when the writer it wraps cannot flush. On
		// the timer's goroutine nothing else would recover it and the
		// process would die; the chunks leave with the response's end.
		if r := recover(); r != nil {
			s.f = nil
		}
	}()
	s.f.Flush()
}

// deadline bounds the write about to happen; a writer without deadlines
// (a test's recorder) has none.
func (s *sse) deadline() { _ = s.rc.SetWriteDeadline(time.Now().Add(s.writeTimeout)) }

// end hands what is buffered to store, which writes it with the run's
// final statement and answers the last batch as logged (normally the
// buffered bytes, then the run's closing chunks); that goes to the client
// and w is handed back: nothing is written to it afterwards.
func (s *sse) end(store func(buffered []byte) []byte) {
	s.logging.Lock()
	s.mu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	b := s.take()
	s.mu.Unlock()
	s.deliver(store(b), false)
	s.writing.Lock()
	defer s.writing.Unlock()
	// The server sets no deadline per request, so one left here would cut
	// the next request on this connection (a long poll, say).
	_ = s.rc.SetWriteDeadline(time.Time{})
}

// close hands w back without a final batch (tests of the buffer alone).
func (s *sse) close() { s.end(func(b []byte) []byte { return b }) }
