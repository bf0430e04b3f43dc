// Package model is the small interface between the step loop and a language
// model, with its two providers: "openai", any OpenAI-compatible Chat
// Completions endpoint (through github.com/openai/openai-go/v3), and
// "scripted", deterministic answers from a file for demos and benchmarks.
package model

import (
	"context"
	"encoding/json"
)

// Role is the author of a model message.
type Role string

// The roles of a model transcript.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of the transcript sent to the model.
type Message struct {
	Role Role
	// Content is the text (user, assistant) or the tool result JSON (tool).
	Content string
	// ToolCalls are the assistant's calls in this step.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
}

// ToolCall is one tool call of a model step.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text the model produced; it may be invalid.
	Arguments string
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the input.
	Parameters json.RawMessage
}

// Request is one model step.
type Request struct {
	System   string
	Messages []Message
	Tools    []Tool
}

// Step is what a model step produced once its stream ended.
type Step struct {
	Text      string
	ToolCalls []ToolCall
	// FinishReason is the provider's reason ("stop", "tool_calls", …).
	FinishReason string
}

// Provider runs one model step, streaming text deltas to onText as they
// arrive. Cancelling ctx cancels the model call. An error from onText stops
// the stream and is returned.
type Provider interface {
	Stream(ctx context.Context, req Request, onText func(delta string) error) (Step, error)
}
