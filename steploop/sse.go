package steploop

import (
	"encoding/json"
	"net/http"
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
// most of a chat's CPU.
const FlushDelay = 10 * time.Millisecond

// sse writes UI message stream v1 chunks as Server-Sent Events. Chunks are
// buffered; flushSoon sends them FlushDelay later unless the handler has
// ended by then, and what is left when it ends goes out with the
// response's last bytes. So the client sees [DONE] only once the
// transcript is stored and the conversation released. After the first
// failed write (the client went away) every write is a no-op; the
// request's context is cancelled by then and the loop stops on it.
//
// The timer's flush runs on its own goroutine, so every use of w is under
// mu, and none happens after close.
type sse struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	f       http.Flusher
	err     error
	pending bool // written and not yet flushed
	armed   bool // a timed flush is due
	closed  bool // the handler is returning: w is no longer ours
	timer   *time.Timer
	delay   time.Duration // FlushDelay; tests set their own
	rc      *http.ResponseController
	// writeTimeout bounds each write to the client (WriteTimeout).
	writeTimeout time.Duration
}

// WriteTimeout bounds one write of the chat stream: a client that stops
// reading while keeping its connection open (its socket buffer full) fails
// the stream, whose turn then ends as if it had gone away, instead of
// holding the handler and the conversation's lease, and graceful shutdown,
// until TCP gives up. The server has no write timeout of its own, since
// streams and long polls outlast any single one.
const WriteTimeout = 30 * time.Second

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer a stream
	h.Set(HeaderStream, "v1")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f, delay: FlushDelay, rc: http.NewResponseController(w), writeTimeout: WriteTimeout}
}

// chunk is one UIMessageChunk; the map keeps each chunk's members exactly
// those ai@7 declares for its type.
type chunk map[string]any

func (s *sse) send(c chunk) {
	b, err := json.Marshal(c)
	if err != nil {
		b, _ = json.Marshal(chunk{"type": "error", "errorText": "the server could not encode a chunk"})
	}
	s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

func (s *sse) done() { s.write([]byte("data: [DONE]\n\n")) }

func (s *sse) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil || s.closed {
		return
	}
	s.deadline()
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	s.pending = true
}

// flushSoon sends what is buffered within FlushDelay: the loop calls it
// before a wait the client should see the stream's progress during.
func (s *sse) flushSoon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil || s.closed || s.f == nil || !s.pending || s.armed {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	if s.err != nil || s.closed || !s.pending {
		return
	}
	s.pending = false
	defer func() {
		// echo.Response panics when the writer it wraps cannot flush. On
		// this goroutine nothing else would recover it and the process
		// would die; the chunks leave with the response's end instead.
		if r := recover(); r != nil {
			s.f = nil
		}
	}()
	s.deadline()
	s.f.Flush()
}

// deadline bounds the write about to happen; a writer without deadlines
// (a test's recorder) has none.
func (s *sse) deadline() { _ = s.rc.SetWriteDeadline(time.Now().Add(s.writeTimeout)) }

// close hands w back to the handler's caller: a due flush is cancelled
// (or, already running, finds it closed), and what is buffered leaves
// with the response's end in one write.
func (s *sse) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	// The server sets no deadline per request, so one left here would cut
	// the next request on this connection (a long poll, say). What is
	// left leaves with the response's end, after the turn has stored its
	// answer and released the conversation.
	_ = s.rc.SetWriteDeadline(time.Time{})
}
