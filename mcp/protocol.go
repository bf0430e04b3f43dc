package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport error codes beside JSON-RPC's own, as the TypeScript SDK's
// server answers them (clients match on them): -32000 a request the
// transport refuses (no session id, an origin not allowed), -32001 a
// session this process does not have.
const (
	codeTransport       = -32000
	codeSessionNotFound = -32001
)

// served are the methods a client may send: the protocol's own and those
// of what the servers advertise in initialize (tools, resources with
// subscriptions, prompts). Neither logging nor completions is advertised,
// so logging/setLevel and completion/complete are unknown here, as are the
// sessionless 2026-07-28 protocol's server/discover and
// subscriptions/listen (handshakeVersions leaves it out). Each is also a
// method the SDK handles, which it checks before any handler runs.
var served = map[string]bool{
	"initialize": true, "ping": true,
	"tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"notifications/progress": true, "notifications/roots/list_changed": true,
}

// strict goes in front of the SDK's handler so that every refusal is a
// JSON-RPC error object in application/json, never the SDK's plain text,
// and a message JSON-RPC 2.0 or the transport (2025-11-25) refuses is
// refused before a session sees it: invalid JSON is -32700, a message that
// is no JSON-RPC 2.0 object -32600, an unknown method -32601 (a request
// gets it as its answer, 200; an unknown notification, which has no
// answer, gets it with status 400), and any message but initialize
// without Mcp-Session-Id is 400. Refusals the SDK makes itself (a session
// it does not have, a second stream) keep their status and get a JSON
// body.
func strict(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && isJSON(r.Header.Get("Content-Type")) && !vetMessage(w, r) {
			return
		}
		jw := &jsonErrors{ResponseWriter: w}
		defer jw.finish()
		next.ServeHTTP(jw, r)
	})
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// vetMessage reads r's body (leaving it for the SDK to read again) and
// answers it if it must be refused, reporting whether to go on. A batch
// goes on whole: the protocol versions before 2025-06-18 take them, and
// the SDK refuses them for the later ones.
func vetMessage(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, gomcp.DefaultMaxRequestBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the body exceeds %d bytes", tooLarge.Limit))
		} else {
			writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "the body could not be read")
		}
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !json.Valid(body) {
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, "Parse error: the body is not JSON")
		return false
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return true
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a message is a JSON object")
		return false
	}
	id := validID(msg["id"])
	_, hasID := msg["id"]
	rawMethod, hasMethod := msg["method"]
	var version, method string
	switch {
	case json.Unmarshal(msg["jsonrpc"], &version) != nil || version != "2.0":
		writeError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
		return false
	case hasID && id == nil:
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, `Invalid Request: "id" must be a string or a number`)
		return false
	case hasMethod && json.Unmarshal(rawMethod, &method) != nil:
		writeError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest, `Invalid Request: "method" must be a string`)
		return false
	case !hasMethod && !hasID:
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, `Invalid Request: a message has a "method" (a request or a notification) or an "id" (an answer)`)
		return false
	}
	switch {
	case method != "initialize" && r.Header.Get("Mcp-Session-Id") == "":
		writeError(w, http.StatusBadRequest, id, codeTransport, "Bad Request: Mcp-Session-Id header is required after initialize")
		return false
	case !hasMethod:
		// An answer to the server's request (elicitation): the SDK
		// matches it to the request.
		return true
	case served[method]:
		return true
	case id != nil:
		writeError(w, http.StatusOK, id, jsonrpc.CodeMethodNotFound, fmt.Sprintf("Method not found: %q", method))
	default:
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeMethodNotFound, fmt.Sprintf("Method not found: %q (a notification)", method))
	}
	return false
}

// validID returns raw if it is a JSON-RPC id MCP allows (a string or a
// number, not null), nil otherwise.
func validID(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(t, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return t
	}
	return nil
}

// writeError answers a JSON-RPC error object for id (null when nil).
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// jsonErrors turns a refusal the SDK writes in plain text (http.Error)
// into a JSON-RPC error object with the same status and message; every
// other response passes through as it is written.
type jsonErrors struct {
	http.ResponseWriter
	refusal *bytes.Buffer
	status  int
}

func (w *jsonErrors) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status, w.refusal = status, &bytes.Buffer{}
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *jsonErrors) Write(p []byte) (int, error) {
	if w.refusal != nil {
		return w.refusal.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *jsonErrors) Flush() {
	if w.refusal == nil {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *jsonErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the refusal held back, if any.
func (w *jsonErrors) finish() {
	if w.refusal == nil {
		return
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	switch {
	case w.status == http.StatusNotFound:
		code = codeSessionNotFound
	case w.status >= 500:
		code = jsonrpc.CodeInternalError
	}
	writeError(w.ResponseWriter, w.status, nil, code, strings.TrimSpace(w.refusal.String()))
}
