package steploop

import (
	"encoding/json"
	"fmt"
	"strings"
)

// runHead is the SSE a replay of a run begins with: its start chunk, then
// the chunks that rebuild m's parts from nothing. ai@7's client resets a
// resumed message at its first start chunk, so a run that continues a
// message must replay all of it, not only what the run adds. The parts
// are rebuilt in the chunk forms that leave a client's copy equal to the
// stored one: whole inputs (tool-input-available; a streamed input would
// leave rawInput behind), then each answer the call got.
func runHead(m Message) []byte {
	var b []byte
	b = append(b, frame(startChunk(m))...)
	n := 0
	for _, p := range m.Parts {
		for _, c := range partChunks(p, &n) {
			b = append(b, frame(c)...)
		}
	}
	return b
}

// startChunk opens a run of m: its id and whole metadata (a client merges
// it into what it holds; a replaying one holds nothing before it).
func startChunk(m Message) chunk {
	c := chunk{"type": "start", "messageId": m.ID}
	if m.Metadata != nil {
		c["messageMetadata"] = m.Metadata
	}
	return c
}

// partChunks rebuilds one stored part; n numbers the text chunks' ids.
func partChunks(p Part, n *int) []chunk {
	switch {
	case p.Type == "step-start":
		return []chunk{{"type": "start-step"}}
	case p.Type == "text" || p.Type == "reasoning":
		kind, id := p.Type, p.ID
		if kind == "text" {
			*n++
			id = fmt.Sprintf("replay-%d", *n)
		}
		out := []chunk{{"type": kind + "-start", "id": id}, {"type": kind + "-delta", "id": id, "delta": deref(p.Text)}}
		if p.State == "done" {
			out = append(out, chunk{"type": kind + "-end", "id": id})
		}
		return out
	case strings.HasPrefix(p.Type, "data-"):
		return []chunk{{"type": p.Type, "id": p.ID, "data": p.Data}}
	case p.IsTool():
		return toolChunks(p)
	}
	return nil
}

func toolChunks(p Part) []chunk {
	id, name := p.ToolCallID, p.ToolName()
	if p.State == StateOutputError && len(p.Input) > 0 && p.Input[0] == '"' {
		// Arguments that were not a JSON object are stored as their text.
		return []chunk{{"type": "tool-input-error", "toolCallId": id, "toolName": name, "input": p.Input, "errorText": p.ErrorText}}
	}
	input := p.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	out := []chunk{{"type": "tool-input-available", "toolCallId": id, "toolName": name, "input": input}}
	if a := p.Approval; a != nil {
		out = append(out, chunk{"type": "tool-approval-request", "approvalId": a.ID, "toolCallId": id})
		if a.Approved != nil {
			r := chunk{"type": "tool-approval-response", "approvalId": a.ID, "approved": *a.Approved}
			if a.Reason != "" {
				r["reason"] = a.Reason
			}
			out = append(out, r)
		}
	}
	switch p.State {
	case StateOutputAvailable:
		out = append(out, chunk{"type": "tool-output-available", "toolCallId": id, "output": jsonOrNull(p.Output)})
	case StateOutputError:
		out = append(out, chunk{"type": "tool-output-error", "toolCallId": id, "errorText": p.ErrorText})
	case StateOutputDenied:
		out = append(out, chunk{"type": "tool-output-denied", "toolCallId": id})
	}
	return out
}

func jsonOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
