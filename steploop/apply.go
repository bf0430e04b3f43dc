package steploop

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// wireChunk is a UIMessageChunk as the step loop sends it, every member it
// uses in one struct.
type wireChunk struct {
	Type            string          `json:"type"`
	ID              string          `json:"id"`
	Delta           string          `json:"delta"`
	MessageID       string          `json:"messageId"`
	MessageMetadata *Metadata       `json:"messageMetadata"`
	ToolCallID      string          `json:"toolCallId"`
	ToolName        string          `json:"toolName"`
	Input           json.RawMessage `json:"input"`
	InputTextDelta  string          `json:"inputTextDelta"`
	Output          json.RawMessage `json:"output"`
	ErrorText       string          `json:"errorText"`
	ApprovalID      string          `json:"approvalId"`
	Approved        *bool           `json:"approved"`
	Reason          string          `json:"reason"`
	Data            json.RawMessage `json:"data"`
}

// applier rebuilds an assistant message from its run's stream as ai@7's
// client does (processUIMessageStream, for the chunks the step loop
// sends): a reaper thus stores what a reader that followed the run holds.
type applier struct {
	m         Message
	text      map[string]int    // open text parts by chunk id
	reasoning map[string]int    // open reasoning parts by chunk id
	raw       map[string]string // arguments of calls still streaming, by call id
}

func newApplier() *applier {
	return &applier{m: Message{Role: "assistant", Parts: []Part{}}, text: map[string]int{}, reasoning: map[string]int{}, raw: map[string]string{}}
}

// sse applies every chunk of an SSE text; [DONE] and blank lines are
// skipped.
func (a *applier) sse(b []byte) error {
	for _, line := range bytes.Split(b, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || bytes.Equal(data, []byte("[DONE]")) {
			continue
		}
		var c wireChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("run log: a chunk is not JSON: %w", err)
		}
		a.chunk(c)
	}
	return nil
}

func (a *applier) chunk(c wireChunk) {
	ps := &a.m.Parts
	switch c.Type {
	case "start":
		if c.MessageID != "" {
			a.m.ID = c.MessageID
		}
		a.metadata(c.MessageMetadata)
	case "finish", "message-metadata":
		a.metadata(c.MessageMetadata)
	case "start-step":
		*ps = append(*ps, Part{Type: "step-start"})
	case "text-start", "reasoning-start":
		p := Part{Type: "text", Text: strPtr(""), State: "streaming"}
		open := a.text
		if c.Type == "reasoning-start" {
			p.Type, p.ID, open = "reasoning", c.ID, a.reasoning
		}
		*ps = append(*ps, p)
		open[c.ID] = len(*ps) - 1
	case "text-delta", "reasoning-delta":
		if i, ok := a.openPart(c); ok {
			*(*ps)[i].Text += c.Delta
		}
	case "text-end", "reasoning-end":
		if i, ok := a.openPart(c); ok {
			(*ps)[i].State = "done"
			delete(a.text, c.ID)
			delete(a.reasoning, c.ID)
		}
	case "tool-input-start":
		p := a.stepTool(c.ToolCallID, c.ToolName)
		p.State, p.Input, p.Output, p.ErrorText = StateInputStreaming, nil, nil, ""
		a.raw[c.ToolCallID] = ""
	case "tool-input-delta":
		a.raw[c.ToolCallID] += c.InputTextDelta
	case "tool-input-available", "tool-input-error":
		p := a.stepTool(c.ToolCallID, c.ToolName)
		p.State, p.Input, p.Output, p.ErrorText = StateInputAvailable, c.Input, nil, ""
		if c.Type == "tool-input-error" {
			p.State, p.ErrorText = StateOutputError, c.ErrorText
		}
		delete(a.raw, c.ToolCallID)
	default:
		a.outcome(c)
	}
}

// outcome applies what happens to an issued call, and data parts.
func (a *applier) outcome(c wireChunk) {
	switch c.Type {
	case "tool-approval-request":
		if p := a.tool(c.ToolCallID); p != nil {
			p.State, p.Approval = StateApprovalRequested, &PartApproval{ID: c.ApprovalID}
		}
	case "tool-approval-response":
		for i := range a.m.Parts {
			if p := &a.m.Parts[i]; p.IsTool() && p.Approval != nil && p.Approval.ID == c.ApprovalID {
				p.State, p.Approval = StateApprovalResponded, &PartApproval{ID: c.ApprovalID, Approved: c.Approved, Reason: c.Reason}
				break
			}
		}
	case "tool-output-available":
		if p := a.tool(c.ToolCallID); p != nil {
			p.State, p.Output, p.ErrorText = StateOutputAvailable, c.Output, ""
		}
	case "tool-output-error":
		if p := a.tool(c.ToolCallID); p != nil {
			p.State, p.Output, p.ErrorText = StateOutputError, nil, c.ErrorText
		}
	case "tool-output-denied":
		if p := a.tool(c.ToolCallID); p != nil {
			p.State = StateOutputDenied
		}
	default:
		if len(c.Type) > 5 && c.Type[:5] == "data-" {
			for i := range a.m.Parts {
				if p := &a.m.Parts[i]; p.Type == c.Type && p.ID == c.ID {
					p.Data = c.Data
					return
				}
			}
			a.m.Parts = append(a.m.Parts, Part{Type: c.Type, ID: c.ID, Data: c.Data})
		}
	}
}

func (a *applier) openPart(c wireChunk) (int, bool) {
	if i, ok := a.text[c.ID]; ok && (c.Type == "text-delta" || c.Type == "text-end") {
		return i, true
	}
	i, ok := a.reasoning[c.ID]
	return i, ok && (c.Type == "reasoning-delta" || c.Type == "reasoning-end")
}

// stepTool is the current step's part for call id, appended when new; its
// type follows the latest tool name (a name may arrive split).
func (a *applier) stepTool(id, name string) *Part {
	ps := a.m.Parts
	for i := len(ps) - 1; i >= 0 && ps[i].Type != "step-start"; i-- {
		if ps[i].IsTool() && ps[i].ToolCallID == id {
			ps[i].Type = "tool-" + name
			return &ps[i]
		}
	}
	a.m.Parts = append(a.m.Parts, Part{Type: "tool-" + name, ToolCallID: id})
	return &a.m.Parts[len(a.m.Parts)-1]
}

// tool is the message's latest part for call id, or nil.
func (a *applier) tool(id string) *Part {
	for i := len(a.m.Parts) - 1; i >= 0; i-- {
		if p := &a.m.Parts[i]; p.IsTool() && p.ToolCallID == id {
			return p
		}
	}
	return nil
}

// metadata merges md into the message's as ai@7 does (members set in md
// win); the step loop always sends it whole.
func (a *applier) metadata(md *Metadata) {
	if md == nil {
		return
	}
	if a.m.Metadata == nil {
		a.m.Metadata = &Metadata{}
	}
	m := a.m.Metadata
	if md.CreatedAt != "" {
		m.CreatedAt = md.CreatedAt
	}
	if md.Model != "" {
		m.Model = md.Model
	}
	if md.Usage != nil {
		m.Usage = md.Usage
	}
	if md.FinishReason != "" {
		m.FinishReason = md.FinishReason
	}
}
