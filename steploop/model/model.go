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
	// Usage is what the endpoint reported the step cost; nil when it
	// reported nothing (unknown, not zero).
	Usage *Usage
}

// Usage is a step's token count as the endpoint reports it.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// CachedInputTokens are the input tokens read from the endpoint's
	// prompt cache; ReasoningTokens the output tokens spent reasoning.
	CachedInputTokens int64
	ReasoningTokens   int64
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens, ReasoningTokens: u.ReasoningTokens + v.ReasoningTokens,
	}
}

// ToolInput is a fragment of a tool call's arguments as it streams. Index
// is the call's position in the step's ToolCalls; the first fragment of a
// call has Start set, with the call's ID (possibly empty) and Name.
type ToolInput struct {
	Index     int
	Start     bool
	ID, Name  string
	Arguments string
}

// Events receives a step's output as it arrives; an error from any of them
// stops the stream and is returned.
type Events interface {
	// Text is a delta of the answer's text.
	Text(delta string) error
	// Reasoning is a delta of the model's reasoning (reasoning_content).
	Reasoning(delta string) error
	// ToolInput is a fragment of a tool call.
	ToolInput(in ToolInput) error
}

// TextOnly is Events for a caller that wants the text alone.
type TextOnly func(delta string) error

// Text implements Events.
func (f TextOnly) Text(d string) error { return f(d) }

// Reasoning implements Events; reasoning is dropped.
func (TextOnly) Reasoning(string) error { return nil }

// ToolInput implements Events; fragments are dropped.
func (TextOnly) ToolInput(ToolInput) error { return nil }

// Provider runs one model step, streaming its output to ev as it arrives.
// Cancelling ctx cancels the model call.
type Provider interface {
	// Name is the model's name, as a message's metadata and the token
	// metrics report it.
	Name() string
	Stream(ctx context.Context, req Request, ev Events) (Step, error)
}
