package model

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Script is the file format of the scripted provider (INVOICED_MODEL_SCRIPT):
//
//	{
//	  "rules": [
//	    {"match": "overdue",
//	     "steps": [
//	       {"tool_calls": [{"name": "list-invoices", "input": {"status": "issued"}}]},
//	       {"text": "Those are the issued invoices."}
//	     ]}
//	  ],
//	  "default": [{"text": "I can list, draft and issue invoices."}],
//	  "chunk_delay_ms": 0
//	}
//
// The first rule whose match occurs (case-insensitively) in the latest user
// message answers; default answers when none does. Its steps are played in
// order within one turn: step n answers the model request that follows n
// earlier assistant steps after that user message. Past the last step the
// answer is an empty text, so a script can never loop.
type Script struct {
	Rules   []ScriptRule `json:"rules"`
	Default []ScriptStep `json:"default"`
	// ChunkDelayMS sleeps between streamed text chunks, for demos.
	ChunkDelayMS int `json:"chunk_delay_ms"`
}

// ScriptRule is one scripted turn.
type ScriptRule struct {
	Match string       `json:"match"`
	Steps []ScriptStep `json:"steps"`
}

// ScriptStep is one scripted model step: text, tool calls, or both.
type ScriptStep struct {
	Text      string           `json:"text"`
	ToolCalls []ScriptToolCall `json:"tool_calls"`
}

// ScriptToolCall is a scripted tool call.
type ScriptToolCall struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Scripted answers from a Script, deterministically.
type Scripted struct {
	script Script
}

// LoadScript reads and checks a script file.
func LoadScript(path string) (*Scripted, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model script: %w", err)
	}
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("model script %s: %w", path, err)
	}
	return NewScripted(s)
}

// NewScripted returns the provider for s.
func NewScripted(s Script) (*Scripted, error) {
	for i, r := range s.Rules {
		if r.Match == "" || len(r.Steps) == 0 {
			return nil, fmt.Errorf("model script: rule %d needs a match and at least one step", i)
		}
	}
	return &Scripted{script: s}, nil
}

// Stream implements Provider.
func (s *Scripted) Stream(ctx context.Context, req Request, onText func(string) error) (Step, error) {
	lastUser, after := -1, 0
	for i, m := range req.Messages {
		if m.Role == RoleUser {
			lastUser, after = i, 0
		} else if m.Role == RoleAssistant && lastUser >= 0 {
			after++
		}
	}
	userText := ""
	if lastUser >= 0 {
		userText = strings.ToLower(req.Messages[lastUser].Content)
	}
	steps := s.script.Default
	for _, r := range s.script.Rules {
		if strings.Contains(userText, strings.ToLower(r.Match)) {
			steps = r.Steps
			break
		}
	}
	var st ScriptStep
	if after < len(steps) {
		st = steps[after]
	}
	out := Step{FinishReason: "stop"}
	for _, chunk := range splitWords(st.Text) {
		if err := ctx.Err(); err != nil {
			return Step{}, err
		}
		if s.script.ChunkDelayMS > 0 {
			select {
			case <-ctx.Done():
				return Step{}, ctx.Err()
			case <-time.After(time.Duration(s.script.ChunkDelayMS) * time.Millisecond):
			}
		}
		if err := onText(chunk); err != nil {
			return Step{}, err
		}
	}
	out.Text = st.Text
	for _, tc := range st.ToolCalls {
		args := string(tc.Input)
		if args == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: newCallID(), Name: tc.Name, Arguments: args})
	}
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls"
	}
	return out, nil
}

// splitWords cuts text into chunks of a word and its trailing space, the
// way models stream.
func splitWords(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
