package steploop

import (
	"encoding/json"
	"strings"

	"github.com/invoiced/invoiced/steploop/model"
)

// Transcript turns stored messages into the model's transcript: user
// text; per assistant step, its text and tool calls followed by one tool
// result per call. It reads only the server's copy.
func Transcript(msgs []Message) []model.Message {
	var out []model.Message
	for _, m := range msgs {
		if m.Role == "user" {
			var sb strings.Builder
			for _, p := range m.Parts {
				if p.Type == "text" && p.Text != nil {
					sb.WriteString(*p.Text)
				}
			}
			out = append(out, model.Message{Role: model.RoleUser, Content: sb.String()})
			continue
		}
		var (
			step    *model.Message
			results []model.Message
		)
		flush := func() {
			if step != nil && (step.Content != "" || len(step.ToolCalls) > 0) {
				out = append(out, *step)
				out = append(out, results...)
			}
			step, results = nil, nil
		}
		for _, p := range m.Parts {
			if p.Type == "step-start" {
				flush()
				continue
			}
			if step == nil {
				step = &model.Message{Role: model.RoleAssistant}
			}
			switch {
			case p.Type == "text" && p.Text != nil:
				step.Content += *p.Text
			case p.IsTool():
				step.ToolCalls = append(step.ToolCalls, model.ToolCall{ID: p.ToolCallID, Name: p.ToolName(), Arguments: arguments(p.Input)})
				results = append(results, model.Message{Role: model.RoleTool, ToolCallID: p.ToolCallID, Content: string(modelResult(p))})
			}
		}
		flush()
	}
	return out
}

// arguments returns the model's own argument text: an object as JSON, or
// the raw text that was not valid JSON (stored as a JSON string).
func arguments(input json.RawMessage) string {
	if len(input) == 0 {
		return "{}"
	}
	var s string
	if input[0] == '"' && json.Unmarshal(input, &s) == nil {
		return s
	}
	return string(input)
}

func modelResult(p Part) json.RawMessage {
	if len(p.ModelResult) > 0 {
		return p.ModelResult
	}
	switch p.State {
	case StateOutputAvailable:
		if len(p.Output) == 0 {
			return json.RawMessage("null")
		}
		return p.Output
	case StateOutputError:
		return mustJSON(map[string]any{"error": map[string]string{"code": "TOOL_ERROR", "message": p.ErrorText}})
	case StateOutputDenied:
		return mustJSON(map[string]any{"error": map[string]string{"code": "CONFIRMATION_INVALID", "reason": "denied", "message": "The user declined this call, so it was not done."}})
	}
	return mustJSON(map[string]any{"error": map[string]string{"code": "NO_RESULT", "message": "The call was interrupted before it produced a result; nothing is known about its effect."}})
}
