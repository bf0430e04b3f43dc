package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawSession speaks Streamable HTTP by hand, so tests can send what no
// SDK client would: another session's id, a forged answer, a replay.
type rawSession struct {
	t     *testing.T
	url   string
	token string
	id    string
	next  atomic.Int64
}

// message is one JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// openSession initializes a session; elicit declares form elicitation.
func openSession(t *testing.T, base, token string, elicit bool) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: base + "/mcp", token: token}
	caps := map[string]any{}
	if elicit {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	resp := s.post("", map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": map[string]any{"name": "raw", "version": "0"}}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s.id = resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, s.id)
	msgs := readAll(t, resp)
	require.Len(t, msgs, 1)
	require.Empty(t, msgs[0].Error)
	r := s.post(s.id, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	require.Equal(t, http.StatusAccepted, r.StatusCode)
	r.Body.Close()
	return s
}

// post sends one message on session id ("" for none) and returns the
// open response.
func (s *rawSession) post(id string, msg any) *http.Response {
	s.t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(s.t, err)
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(b))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	return resp
}

// request sends a request on the session and returns its SSE stream.
func (s *rawSession) request(method string, params any) *sseStream {
	s.t.Helper()
	id := s.next.Add(1)
	resp := s.post(s.id, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	s.t.Cleanup(func() { resp.Body.Close() })
	return &sseStream{t: s.t, r: bufio.NewReader(resp.Body), body: resp.Body}
}

// answer posts a JSON-RPC response to a server request, on session id.
func (s *rawSession) answer(session string, reqID json.RawMessage, result any) int {
	s.t.Helper()
	resp := s.post(session, map[string]any{"jsonrpc": "2.0", "id": reqID, "result": result})
	resp.Body.Close()
	return resp.StatusCode
}

// call runs a tool call to its result, failing on a server request.
func (s *rawSession) call(name string, args any) toolResult {
	s.t.Helper()
	return s.request("tools/call", map[string]any{"name": name, "arguments": args}).result()
}

type sseStream struct {
	t    *testing.T
	r    *bufio.Reader
	body io.Closer
}

// drop closes the stream's connection unread, as a client that crashed
// or lost its network does: no notifications/cancelled is sent.
func (st *sseStream) drop() { st.body.Close() }

// next returns the next message of the stream.
func (st *sseStream) next() message {
	st.t.Helper()
	for {
		line, err := st.r.ReadString('\n')
		require.NoError(st.t, err, "the stream ended before a message")
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok || data == "" {
			continue
		}
		var m message
		require.NoError(st.t, json.Unmarshal([]byte(data), &m), data)
		return m
	}
}

// result reads the stream's tool result.
func (st *sseStream) result() toolResult {
	st.t.Helper()
	m := st.next()
	require.Empty(st.t, m.Method, "expected the result, got a %s request", m.Method)
	require.Empty(st.t, m.Error, "protocol error")
	var r toolResult
	require.NoError(st.t, json.Unmarshal(m.Result, &r))
	return r
}

// toolResult is a tools/call result; Error parses an error result's text.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct{ Text string }
}

func (r toolResult) error(t *testing.T) toolError {
	t.Helper()
	require.True(t, r.IsError, "expected an error result: %s", r.Content)
	var body struct{ Error toolError }
	require.NoError(t, json.Unmarshal([]byte(r.Content[0].Text), &body))
	return body.Error
}

// readAll reads a finished response's messages (SSE or JSON).
func readAll(t *testing.T, resp *http.Response) []message {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		var m message
		require.NoError(t, json.Unmarshal(b, &m))
		return []message{m}
	}
	var out []message
	for _, line := range strings.Split(string(b), "\n") {
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok && data != "" {
			var m message
			require.NoError(t, json.Unmarshal([]byte(data), &m))
			out = append(out, m)
		}
	}
	return out
}

// get opens a GET stream on session id with token.
func get(t *testing.T, base, token, session string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	require.NoError(t, err)
	return resp
}
