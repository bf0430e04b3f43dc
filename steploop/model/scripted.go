package model

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// ScriptStep is one scripted model step: text, tool calls, or both, after
// optional reasoning (streamed first, as reasoning models do).
type ScriptStep struct {
	Reasoning string           `json:"reasoning"`
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
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("model script %s: more than one JSON value in the file", path)
	}
	sc, err := NewScripted(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// NewScripted returns the provider for s. It refuses a script that could
// not answer as written: no rules and no default, a rule without a match
// or steps, a step with neither text nor tool calls, a tool call without
// a name or whose input is not a JSON object, a negative delay.
func NewScripted(s Script) (*Scripted, error) {
	if len(s.Rules) == 0 && len(s.Default) == 0 {
		return nil, errors.New("model script: it needs at least one rule or a default")
	}
	if s.ChunkDelayMS < 0 {
		return nil, fmt.Errorf("model script: chunk_delay_ms must not be negative, not %d", s.ChunkDelayMS)
	}
	for i, r := range s.Rules {
		if r.Match == "" || len(r.Steps) == 0 {
			return nil, fmt.Errorf("model script: rule %d needs a match and at least one step", i)
		}
		if err := checkSteps(r.Steps); err != nil {
			return nil, fmt.Errorf("model script: rule %d: %w", i, err)
		}
	}
	if err := checkSteps(s.Default); err != nil {
		return nil, fmt.Errorf("model script: default: %w", err)
	}
	return &Scripted{script: s}, nil
}

func checkSteps(steps []ScriptStep) error {
	for i, st := range steps {
		if st.Text == "" && len(st.ToolCalls) == 0 {
			return fmt.Errorf("step %d needs text or tool_calls", i)
		}
		for j, tc := range st.ToolCalls {
			if tc.Name == "" {
				return fmt.Errorf("step %d: tool call %d needs a name", i, j)
			}
			if in := bytes.TrimSpace(tc.Input); len(in) > 0 && in[0] != '{' {
				return fmt.Errorf("step %d: tool call %d (%s): input must be a JSON object", i, j, tc.Name)
			}
		}
	}
	return nil
}

// Name implements Provider.
func (s *Scripted) Name() string { return "scripted" }

// Stream implements Provider.
func (s *Scripted) Stream(ctx context.Context, req Request, ev Events) (Step, error) {
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
	if err := s.play(ctx, st.Reasoning, ev.Reasoning); err != nil {
		return Step{}, err
	}
	if err := s.play(ctx, st.Text, ev.Text); err != nil {
		return Step{}, err
	}
	out.Text = st.Text
	for i, tc := range st.ToolCalls {
		args := string(tc.Input)
		if args == "" {
			args = "{}"
		}
		call := ToolCall{ID: newCallID(), Name: tc.Name, Arguments: args}
		if err := ev.ToolInput(ToolInput{Index: i, Start: true, ID: call.ID, Name: call.Name}); err != nil {
			return Step{}, err
		}
		if err := ev.ToolInput(ToolInput{Index: i, Arguments: args}); err != nil {
			return Step{}, err
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls"
	}
	return out, nil
}

// play streams text word by word to emit, with the script's delay.
func (s *Scripted) play(ctx context.Context, text string, emit func(string) error) error {
	for _, chunk := range splitWords(text) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.script.ChunkDelayMS > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(s.script.ChunkDelayMS) * time.Millisecond):
			}
		}
		if err := emit(chunk); err != nil {
			return err
		}
	}
	return nil
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
