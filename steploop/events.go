package steploop

import (
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/steploop/model"
)

// stepOutput is the model.Events of one step: reasoning, text and tool
// calls reach the answer (and the client) as they arrive, in that order.
// Reasoning is closed when text or a call starts, as ai@7's own
// providers do.
type stepOutput struct {
	t         *turn
	text      stepText
	reasoning stepText
	// calls are the step's calls whose arguments stream, by index.
	calls map[int]*streamingCall
}

// streamingCall is a tool call whose part the client already holds, in
// state input-streaming, while its arguments arrive.
type streamingCall struct {
	id   string
	args strings.Builder
}

func newStepOutput(t *turn) *stepOutput {
	return &stepOutput{t: t, text: stepText{t: t, kind: "text", idx: -1}, reasoning: stepText{t: t, kind: "reasoning", idx: -1},
		calls: map[int]*streamingCall{}}
}

// Text implements model.Events.
func (o *stepOutput) Text(d string) error {
	o.reasoning.end()
	o.text.write(d)
	return nil
}

// Reasoning implements model.Events.
func (o *stepOutput) Reasoning(d string) error {
	o.reasoning.write(d)
	return nil
}

// ToolInput implements model.Events: a call's part appears at its first
// fragment, so a UI can show "drafting an invoice…" while it arrives.
func (o *stepOutput) ToolInput(in model.ToolInput) error {
	t := o.t
	if in.Start {
		o.reasoning.end()
		id := in.ID
		if id == "" || t.part(id) != nil || t.seenAnywhere(id) {
			id = newCallID()
		}
		a := t.asst()
		a.Parts = append(a.Parts, Part{Type: "tool-" + in.Name, ToolCallID: id, State: StateInputStreaming})
		o.calls[in.Index] = &streamingCall{id: id}
		t.out.send(chunk{"type": "tool-input-start", "toolCallId": id, "toolName": in.Name})
		t.out.flushSoon()
		return nil
	}
	c := o.calls[in.Index]
	if c == nil || in.Arguments == "" {
		return nil
	}
	c.args.WriteString(in.Arguments)
	t.out.send(chunk{"type": "tool-input-delta", "toolCallId": c.id, "inputTextDelta": in.Arguments})
	t.out.flushSoon()
	return nil
}

// errCutCall is a call whose arguments never arrived whole: the step
// failed or was stopped while they streamed. It did not run.
var errCutCall = problem.New(http.StatusConflict, codeNoResult,
	"Not run: the model's answer ended before this call's arguments were complete.")

// end closes the step's text and reasoning; when the step failed (err),
// the calls still streaming end as input errors, in the stream and the
// answer alike, since none of them can run.
func (o *stepOutput) end(err error) {
	o.reasoning.end()
	o.text.end()
	if err == nil {
		return
	}
	for _, c := range o.calls {
		if p := o.t.part(c.id); p != nil && p.State == StateInputStreaming {
			o.t.inputError(p, mustJSON(c.args.String()), errCutCall)
		}
	}
}
