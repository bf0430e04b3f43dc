package steploop

import (
	"encoding/json"
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

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"error": map[string]string{"code": "UNENCODABLE", "message": "the result could not be encoded as JSON"}})
	}
	return b
}
