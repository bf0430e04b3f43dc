package steploop

import (
	"encoding/json"
	"net/http"
)

// HeaderStream is the header that marks a UI message stream response; ai@7
// clients check it.
const HeaderStream = "x-vercel-ai-ui-message-stream"

// sse writes UI message stream v1 chunks as Server-Sent Events. Chunks are
// buffered and flushed when the loop is about to wait on something outside
// this process (the model, a tool), for each text delta, and when the
// handler returns: a chat's dozen chunks cost about five writes instead of
// a dozen, and the client sees [DONE] only once the transcript is stored
// and the conversation released. After the first failed write (the client
// went away) every write is a no-op; the request's context is cancelled by
// then and the loop stops on it.
type sse struct {
	w   http.ResponseWriter
	f   http.Flusher
	err error
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer a stream
	h.Set(HeaderStream, "v1")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// chunk is one UIMessageChunk; the map keeps each chunk's members exactly
// those ai@7 declares for its type.
type chunk map[string]any

func (s *sse) send(c chunk) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		b, _ = json.Marshal(chunk{"type": "error", "errorText": "the server could not encode a chunk"})
	}
	s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

func (s *sse) done() { s.write([]byte("data: [DONE]\n\n")) }

func (s *sse) write(b []byte) {
	if s.err != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
	}
}

// flush sends what is buffered to the client.
func (s *sse) flush() {
	if s.err == nil && s.f != nil {
		s.f.Flush()
	}
}
