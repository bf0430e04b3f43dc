package steploop

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Message is a UIMessage of the AI SDK (ai@7 UIMessage) as the server stores
// it. The API returns it through UI, which strips server-only members.
type Message struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one UIMessage part: "text", "step-start", "data-*" or "tool-<name>"
// (a static tool part, UIToolInvocation in ai@7). Fields follow the wire
// names exactly.
type Part struct {
	Type string `json:"type"`
	// Text is the text of a text part.
	Text *string `json:"text,omitempty"`
	// State is a text part's "streaming"|"done" or a tool part's
	// "input-available", "approval-requested", "approval-responded",
	// "output-available", "output-error", "output-denied".
	State string `json:"state,omitempty"`
	// ID and Data belong to data parts.
	ID   string          `json:"id,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	// ToolCallID, Input, Output, ErrorText and Approval belong to tool parts.
	ToolCallID string          `json:"toolCallId,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
	Approval   *PartApproval   `json:"approval,omitempty"`
	// ModelResult is server-only: the tool result the model reads when it
	// is not Output (a denial's typed CONFIRMATION_INVALID, an error's
	// code). Never sent to clients, never taken from them.
	ModelResult json.RawMessage `json:"x_model_result,omitempty"`
}

// PartApproval is a tool part's approval member: a frontend confirmation
// (ADR-0005) the browser answers.
type PartApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Tool part states (ai@7 UIToolInvocation).
const (
	StateInputAvailable    = "input-available"
	StateApprovalRequested = "approval-requested"
	StateApprovalResponded = "approval-responded"
	StateOutputAvailable   = "output-available"
	StateOutputError       = "output-error"
	StateOutputDenied      = "output-denied"
)

// IsTool reports whether p is a tool part.
func (p Part) IsTool() bool { return strings.HasPrefix(p.Type, "tool-") }

// ToolName is the tool of a tool part.
func (p Part) ToolName() string { return strings.TrimPrefix(p.Type, "tool-") }

// Resolved reports whether a tool part has its result.
func (p Part) Resolved() bool {
	switch p.State {
	case StateOutputAvailable, StateOutputError, StateOutputDenied:
		return true
	}
	return false
}

// UI returns m as clients see it: server-only members removed.
func (m Message) UI() Message {
	out := Message{ID: m.ID, Role: m.Role, Parts: make([]Part, len(m.Parts))}
	for i, p := range m.Parts {
		p.ModelResult = nil
		out.Parts[i] = p
	}
	return out
}

func strPtr(s string) *string { return &s }

// sameJSON reports whether two JSON documents are the same value. Clients
// parse and re-serialise what they were sent (JavaScript may rewrite 1.50 as
// 1.5, reorder nothing but may drop whitespace), and jsonb rewrites numbers
// (1e2 is stored as 100), so bytes cannot be compared. Numbers compare as
// float64, like a JavaScript client reads them; one beyond that range
// compares as ±Inf rather than failing, so a stored value (a model's
// tool input, say) can always be matched by the copy the server gave out.
func sameJSON(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b) || isNull(a) && isNull(b)
	}
	va, okA := decodeJSONNumbers(a)
	vb, okB := decodeJSONNumbers(b)
	return okA && okB && equalJSON(va, vb)
}

// decodeJSONNumbers decodes raw keeping numbers as json.Number.
func decodeJSONNumbers(raw []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data after the value
	}
	return v, true
}

// equalJSON compares two decoded JSON values, numbers by their float64
// value (±Inf past its range).
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !equalJSON(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, errA := strconv.ParseFloat(string(a), 64)
		fb, errB := strconv.ParseFloat(string(b), 64)
		return fa == fb && rangeOnly(errA) && rangeOnly(errB)
	default:
		return a == b
	}
}

// rangeOnly reports whether err is nil or only says the number is past
// float64's range (ParseFloat then returns ±Inf).
func rangeOnly(err error) bool {
	return err == nil || errors.Is(err, strconv.ErrRange)
}

func isNull(b []byte) bool { return len(b) == 0 || string(b) == "null" }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"error": map[string]string{"code": "UNENCODABLE", "message": "the result could not be encoded as JSON"}})
	}
	return b
}
