package steploop

import (
	"encoding/json"
	"strings"
)

// Message is a UIMessage of the AI SDK (ai@7 UIMessage) as the server stores
// it. The API returns it through UI, which strips server-only members.
type Message struct {
	ID       string    `json:"id"`
	Role     string    `json:"role"`
	Metadata *Metadata `json:"metadata,omitempty"`
	Parts    []Part    `json:"parts"`
}

// Metadata is an assistant message's messageMetadata (ai@7): when its
// first run began, the model, the tokens every run of it cost, and how the
// last one ended. A client merges what start and finish chunks carry into
// its copy, so every chunk carries all of it: a reader replaying the run
// from nothing then holds the same.
type Metadata struct {
	// CreatedAt is an RFC 3339 time in milliseconds, as JavaScript's
	// Date.toISOString writes it.
	CreatedAt string `json:"createdAt,omitempty"`
	Model     string `json:"model,omitempty"`
	// Usage is absent while the endpoint reported none.
	Usage *Usage `json:"usage,omitempty"`
	// FinishReason is the finish chunk's reason of the last run:
	// "interrupted" marks an answer a stop, a crash or a shutdown cut.
	FinishReason string `json:"finishReason,omitempty"`
}

// Usage is token usage in ai@7's names (LanguageModelUsage).
type Usage struct {
	InputTokens        int64              `json:"inputTokens"`
	OutputTokens       int64              `json:"outputTokens"`
	TotalTokens        int64              `json:"totalTokens"`
	InputTokenDetails  InputTokenDetails  `json:"inputTokenDetails"`
	OutputTokenDetails OutputTokenDetails `json:"outputTokenDetails"`
}

// InputTokenDetails splits the input tokens.
type InputTokenDetails struct {
	CacheReadTokens int64 `json:"cacheReadTokens"`
}

// OutputTokenDetails splits the output tokens.
type OutputTokenDetails struct {
	ReasoningTokens int64 `json:"reasoningTokens"`
}

// finishInterrupted is the finish reason of an answer that was cut: ai@7's
// "stream ended without a completion signal; output may be incomplete".
const finishInterrupted = "interrupted"

// Part is one UIMessage part: "text", "reasoning", "step-start", "data-*"
// or "tool-<name>" (a static tool part, UIToolInvocation in ai@7). Fields
// follow the wire names exactly.
type Part struct {
	Type string `json:"type"`
	// Text is the text of a text or reasoning part.
	Text *string `json:"text,omitempty"`
	// State is a text or reasoning part's "streaming"|"done" or a tool
	// part's "input-streaming" (only while its arguments arrive; never
	// stored), "input-available", "approval-requested",
	// "approval-responded", "output-available", "output-error",
	// "output-denied".
	State string `json:"state,omitempty"`
	// ID belongs to data and reasoning parts, Data to data parts.
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
	StateInputStreaming    = "input-streaming"
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
	out := Message{ID: m.ID, Role: m.Role, Metadata: m.Metadata, Parts: make([]Part, len(m.Parts))}
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
