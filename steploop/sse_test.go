package steploop

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// flushRecorder is an http.ResponseWriter that fails the test when it is
// used after the handler handed it back.
type flushRecorder struct {
	mu       sync.Mutex
	rec      *httptest.ResponseRecorder
	flushes  int
	released bool
	t        *testing.T
}

func (f *flushRecorder) Header() http.Header { return f.rec.Header() }
func (f *flushRecorder) WriteHeader(code int) {
	f.rec.WriteHeader(code)
}
func (f *flushRecorder) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.released {
		f.t.Error("write after the handler returned")
	}
	return f.rec.Write(b)
}
func (f *flushRecorder) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.released {
		f.t.Error("flush after the handler returned")
	}
	f.flushes++
}
func (f *flushRecorder) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flushes
}

// A chunk asked to be flushed reaches the client while the loop waits,
// within FlushDelay.
func TestSSEFlushesSoonWhileTheLoopWaits(t *testing.T) {
	t.Parallel()
	w := &flushRecorder{rec: httptest.NewRecorder(), t: t}
	s := newSSE(w)
	s.send(chunk{"type": "start"})
	s.flushSoon()
	require.Eventually(t, func() bool { return w.count() == 1 }, time.Second, time.Millisecond)
	s.close()
}

// Chunks written in a burst shorter than the delay leave together with
// the response's end, not in flushes of their own.
func TestSSECoalescesABurst(t *testing.T) {
	t.Parallel()
	w := &flushRecorder{rec: httptest.NewRecorder(), t: t}
	s := newSSE(w)
	s.delay = time.Hour
	for range 5 {
		s.send(chunk{"type": "text-delta", "delta": "x"})
		s.flushSoon()
	}
	s.close()
	require.Zero(t, w.count())
	require.Equal(t, 5, strings.Count(w.rec.Body.String(), `"text-delta"`))
}

// A flush that falls due as the handler returns does not touch the
// response the handler no longer owns, and nor does a late chunk.
func TestSSELeavesTheResponseAloneAfterClose(t *testing.T) {
	t.Parallel()
	for range 50 {
		w := &flushRecorder{rec: httptest.NewRecorder(), t: t}
		s := newSSE(w)
		s.delay = time.Microsecond
		s.send(chunk{"type": "start"})
		s.flushSoon()
		s.close()
		w.mu.Lock()
		w.released = true
		w.mu.Unlock()
		s.send(chunk{"type": "late"})
		s.flushSoon()
		time.Sleep(time.Millisecond)
		require.NotContains(t, w.rec.Body.String(), "late")
	}
}

// clientErr is s's client's first failed write, or nil.
func clientErr(s *sse) error {
	s.writing.Lock()
	defer s.writing.Unlock()
	return s.err
}

// panicFlusher is a writer that claims to flush and panics doing so, as
// echo.Response does over a writer that cannot.
type panicFlusher struct{ *httptest.ResponseRecorder }

func (panicFlusher) Flush() { panic("response writer does not implement http.Flusher") }

// A writer whose flush panics costs the stream its early flushes, not the
// process: the timed flush runs on a goroutine of its own.
func TestSSETimedFlushSurvivesAWriterThatCannotFlush(t *testing.T) {
	t.Parallel()
	w := panicFlusher{httptest.NewRecorder()}
	s := newSSE(w)
	s.delay = time.Microsecond
	s.send(chunk{"type": "start"})
	s.flushSoon()
	require.Eventually(t, func() bool {
		s.writing.Lock()
		defer s.writing.Unlock()
		return s.f == nil
	}, time.Second, time.Millisecond)
	s.send(chunk{"type": "finish"})
	s.flushSoon()
	s.close()
	require.Contains(t, w.Body.String(), `"finish"`)
}

// A client that stops reading while its connection stays open fails the
// stream's writes once its socket buffer is full, instead of holding the
// goroutine that sends the run's batches until TCP gives up.
func TestSSEWriteToAClientThatStopsReadingFails(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := newSSE(w)
		s.writeTimeout = 200 * time.Millisecond
		defer s.close()
		big := strings.Repeat("x", 64<<10)
		for i := 0; i < 4096 && clientErr(s) == nil; i++ { // up to 256 MiB: more than any socket buffer
			s.send(chunk{"type": "text-delta", "delta": big})
			_ = s.flushWith(func([]byte) error { return nil })
		}
		done <- clientErr(s)
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	// ... and never reads.
	select {
	case err := <-done:
		require.Error(t, err, "the write failed on its deadline")
	case <-time.After(20 * time.Second):
		t.Fatal("the handler is still blocked writing to a client that stopped reading")
	}
}

// FuzzFrame: a chunk's event carries exactly the bytes encoding/json
// writes for it, whatever its members' names and values.
func FuzzFrame(f *testing.F) {
	f.Add("text-delta", "delta", "Found it.", "", true, []byte(`{"id":"c1"}`))
	f.Add("tool-output-available", "output", "a \"quoted\" <b>&</b>\n\t\x01\x7f", "é \u2028 \xff", false, []byte(` [1, "<", {"a" : null}] `))
	f.Add("", "", "", "", false, []byte(`not json`))
	f.Add("text-delta", "delta", "x < y && y > z", "\u2028", false, []byte(`"<"`))
	f.Fuzz(func(t *testing.T, typ, name, s1, s2 string, flag bool, raw []byte) {
		for _, c := range []chunk{
			{"type": typ, name: s1, "id": s2},
			{"type": typ, "approved": flag, "errorText": s1, name: json.RawMessage(raw)},
			{"type": typ, "messageMetadata": &Metadata{Model: s2, Usage: &Usage{InputTokens: int64(len(s1))}}, "data": nil, name: []string{s1, s2}},
			{name: s2},
			{},
		} {
			want, err := json.Marshal(c)
			if err != nil {
				want, _ = json.Marshal(chunk{"type": "error", "errorText": "the server could not encode a chunk"})
			}
			require.Equal(t, "data: "+string(want)+"\n\n", string(frame(c)))
		}
	})
}

func BenchmarkFrame(b *testing.B) {
	c := chunk{"type": "tool-input-available", "toolCallId": "call_0123456789", "toolName": "get-customer", "input": json.RawMessage(`{"customer_id":"0193a5b2-7c1d-7e3f-9a4b-5c6d7e8f9a0b"}`)}
	for b.Loop() {
		frame(c)
	}
}
