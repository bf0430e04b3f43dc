package steploop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/steploop/model"
)

// dispatch emits a tool call and handles it by kind; it reports whether
// the call waits for the browser. streamed is the call's part the client
// already holds (its arguments streamed), or nil.
func (t *turn) dispatch(tc model.ToolCall, streamed *streamingCall) bool {
	p := t.callPart(tc, streamed)
	input, inputErr := toolInput(tc.Arguments)
	if inputErr != nil {
		t.inputError(p, input, inputErr)
		return false
	}
	p.State, p.Input = StateInputAvailable, input
	t.out.send(chunk{"type": "tool-input-available", "toolCallId": p.ToolCallID, "toolName": tc.Name, "input": input})
	// The tool may take a while (a bound one waits on the confirm
	// controller's statements): show the call first.
	t.out.flushSoon()
	if err := t.notRun(); err != nil {
		t.toolError(p, err)
		return false
	}
	id := p.ToolCallID
	if t.s.isFrontend(tc.Name) {
		if _, err := t.s.frontend.Prepare(tc.Name, input); err != nil {
			t.toolError(p, err)
			return false
		}
		return true
	}
	risk, ok := t.s.risks[tc.Name]
	if !ok {
		t.toolError(p, problem.New(404, capability.CodeUnknownCapability, fmt.Sprintf("there is no tool named %q", tc.Name)))
		return false
	}
	call, err := t.prepare(tc.Name, input)
	if err != nil {
		t.toolError(p, err)
		return false
	}
	if err := t.recheck(); err != nil {
		t.toolError(p, err)
		return false
	}
	switch risk {
	case capability.RiskBound:
		ctx, cancel := t.toolCtx()
		defer cancel()
		out, err := t.s.cfg.Confirm.Call(ctx, t.confirmRequest(call, id, nil), t.runner(call))
		if err != nil {
			t.toolError(p, interrupted(ctx, err))
			return false
		}
		return t.confirmOutcome(p, call, out)
	default:
		ctx, cancel := t.toolCtx()
		defer cancel()
		v, err := t.invoke(ctx, call)
		t.toolResult(p, call, v, err)
		return false
	}
}

// toolInput is the input a model's tool call is stored with, and why it
// cannot run (nil when it can). No arguments are {}. Arguments that are
// not a JSON object, or that jsonb cannot store or a JavaScript client
// cannot send back as they are (a number past ±1.8e308 comes back as
// null), are kept as a JSON string: stored as given, the answer could not
// be saved or the conversation not continued.
func toolInput(arguments string) (json.RawMessage, error) {
	args := strings.TrimSpace(arguments)
	if args == "" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid([]byte(args)) || !strings.HasPrefix(args, "{") {
		return mustJSON(jsondoc.StorableText(arguments)), problem.Invalid("input", "the tool arguments are not a JSON object")
	}
	if unstorable := jsondoc.Unstorable(json.RawMessage(args)); unstorable != "" {
		return mustJSON(jsondoc.StorableText(arguments)), problem.Invalid("input", "the tool arguments %s", unstorable)
	}
	return json.RawMessage(args), nil
}

// callPart is the answer's part for tc: the one its streamed arguments
// opened (renamed, should the name have arrived split), or a new one with
// an id of its own when the model gave none or one already used.
func (t *turn) callPart(tc model.ToolCall, streamed *streamingCall) *Part {
	if streamed != nil {
		if p := t.part(streamed.id); p != nil {
			p.Type = "tool-" + tc.Name
			return p
		}
	}
	id := tc.ID
	if id == "" || t.part(id) != nil || t.seenAnywhere(id) {
		id = newCallID()
	}
	a := t.asst()
	a.Parts = append(a.Parts, Part{Type: "tool-" + tc.Name, ToolCallID: id})
	return &a.Parts[len(a.Parts)-1]
}

func newCallID() string { return "call_" + strings.ReplaceAll(uuid.NewString(), "-", "") }

func (t *turn) seenAnywhere(id string) bool {
	for _, m := range t.msgs {
		for _, p := range m.Parts {
			if p.IsTool() && p.ToolCallID == id {
				return true
			}
		}
	}
	return false
}

func (t *turn) prepare(name string, input json.RawMessage) (capability.Call, error) {
	call, err := t.s.cfg.Tools.Prepare(name, input)
	if err != nil {
		return call, err
	}
	call.Principal = t.p
	call.Via = capability.AgentPath(t.lease.ID)
	return call, nil
}

// toolCtx is what a tool call runs under: the run's deadline and a
// shutdown, but not the client going away. A call that has started runs
// to its end, because its transaction may already be committing when the
// client leaves (pgx would report the cancellation while PostgreSQL
// commits), and the transcript must say what the call did. The next model
// step is what a disconnect cancels.
func (t *turn) toolCtx() (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(t.ctx)
	cancelDeadline := context.CancelFunc(func() {})
	if d, ok := t.ctx.Deadline(); ok {
		base, cancelDeadline = context.WithDeadline(base, d)
	}
	ctx, cancel := context.WithCancelCause(base)
	// A shutdown ends even a running tool whose client has gone: the
	// process is going away, and a tool waiting on a lock would otherwise
	// hold it for minutes.
	stop := context.AfterFunc(t.s.stopping, func() { cancel(errShuttingDown) })
	return ctx, func() { stop(); cancel(context.Canceled); cancelDeadline() }
}

func (t *turn) runner(call capability.Call) func(ctx context.Context) (any, error) {
	return func(ctx context.Context) (any, error) { return t.invoke(ctx, call) }
}

// recheck checks the turn's credential again once the last check is
// older than CredentialMaxAge, before a call acts on it (and before a
// confirmation is spent on it). On failure nothing more runs for this
// principal: the turn ends with what it has, telling the client why.
func (t *turn) recheck() error {
	if time.Since(identity.CheckedAt(t.ctx)) <= t.s.cfg.CredentialMaxAge {
		return nil
	}
	ctx, cancel := t.toolCtx()
	defer cancel()
	err := identity.Recheck(ctx)
	if err == nil {
		return nil
	}
	t.halted = true
	t.errorText = "The server could not check your credentials again; the error has been logged. Send the message again to retry."
	if problem.HasCode(err, problem.CodeUnauthenticated) {
		t.errorText = "Your credentials are no longer valid (token revoked, user disabled or role changed); sign in again to continue."
	}
	return err
}

// invoke runs a capability and turns a panic in its handler into an
// error: the call then ends as a tool error like any other failure,
// instead of staying unanswered in the transcript, where it would block
// the conversation for good.
func (t *turn) invoke(ctx context.Context, call capability.Call) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("tool %s panicked: %v\n%s", call.Name, r, debug.Stack())
		}
	}()
	v, err = t.s.cfg.Tools.Invoke(ctx, call)
	return v, interrupted(ctx, err)
}

func (t *turn) confirmRequest(call capability.Call, toolCallID string, ev *confirm.Evidence) confirm.Request {
	return confirm.Request{
		Capability: call.Name, InputHash: call.InputHash, ConversationID: t.lease.ID,
		ToolCallID: toolCallID, Principal: t.p.UserID, Evidence: ev,
	}
}

// confirmOutcome applies the controller's answer; it reports whether the
// call now waits for the browser.
func (t *turn) confirmOutcome(p *Part, call capability.Call, out confirm.Outcome) bool {
	switch {
	case out.Pause != nil:
		p.State = StateApprovalRequested
		p.Approval = &PartApproval{ID: out.Pause.ID}
		t.out.send(chunk{"type": "tool-approval-request", "approvalId": out.Pause.ID, "toolCallId": p.ToolCallID})
		return true
	case out.Ran:
		t.toolResult(p, call, out.Output, out.Err)
	case out.Result != nil && out.Result.Error.Reason == confirm.ReasonDenied:
		p.State = StateOutputDenied
		p.ModelResult = mustJSON(out.Result)
		t.out.send(chunk{"type": "tool-output-denied", "toolCallId": p.ToolCallID})
	case out.Result != nil:
		t.outputAvailable(p, out.Result)
	default:
		t.toolError(p, errors.New("confirm controller returned no outcome"))
	}
	return false
}

// answerApproval retries a paused bound call with the browser's answer as
// evidence. The effective input is recomputed from the stored tool call,
// never the client's copy (ADR-0005).
func (t *turn) answerApproval(a ApprovalAnswer) {
	p := t.part(a.ToolCallID)
	t.attempted[a.ToolCallID] = true
	if err := t.notRun(); err != nil {
		t.toolError(p, err)
		return
	}
	if err := t.recheck(); err != nil {
		t.toolError(p, err)
		return
	}
	call, err := t.prepare(p.ToolName(), p.Input)
	if err != nil {
		t.toolError(p, err)
		return
	}
	ev := &confirm.Evidence{ConfirmationID: a.ApprovalID, Approved: a.Approved, Reason: a.Reason}
	t.out.flushSoon()
	ctx, cancel := t.toolCtx()
	defer cancel()
	out, err := t.s.cfg.Confirm.Call(ctx, t.confirmRequest(call, a.ToolCallID, ev), t.runner(call))
	if err != nil {
		t.toolError(p, interrupted(ctx, err))
		return
	}
	t.confirmOutcome(p, call, out)
}

func (t *turn) outputAvailable(p *Part, v any) {
	p.State, p.Output, p.ErrorText, p.ModelResult = StateOutputAvailable, mustJSON(v), "", nil
	t.out.send(chunk{"type": "tool-output-available", "toolCallId": p.ToolCallID, "output": p.Output})
}

// toolResult records a handler's answer. A consequential capability's
// approval answers become a typed result plus a data-approval part, never
// a tool-approval-request: stock UIs would hand the decision to the chat
// user (ADR-0010).
func (t *turn) toolResult(p *Part, call capability.Call, v any, err error) {
	if err == nil {
		t.outputAvailable(p, v)
		return
	}
	if pe, ok := problem.As(err); ok && strings.HasPrefix(pe.Code, "APPROVAL_") {
		t.approvalResult(p, call, pe)
		return
	}
	t.toolError(p, err)
}

func (t *turn) approvalResult(p *Part, call capability.Call, pe *problem.Error) {
	approvalID, status := pe.Extra["approval_id"], pe.Extra["approval_status"]
	msg := capability.ApprovalGuidance(pe.Code, pe.Detail)
	t.outputAvailable(p, map[string]any{"error": map[string]any{
		"code": pe.Code, "approval_id": approvalID, "status": status, "message": msg,
	}})
	d := map[string]any{"approval_id": approvalID, "status": status, "capability": call.Name, "target": approvalTarget(pe, call)}
	// How far a pending request is, so the UI can say how many approvals
	// remain (a stricter policy may have asked for more since it was raised).
	if n, ok := pe.Extra["required_approvals"]; ok {
		d["approvals"], d["required_approvals"] = pe.Extra["approvals"], n
	}
	data := mustJSON(d)
	id := fmt.Sprint(approvalID)
	// A data part with the same id replaces the earlier one, as ai@7
	// clients do, so both copies of the transcript stay alike.
	a := t.asst()
	replaced := false
	for i := range a.Parts {
		if a.Parts[i].Type == "data-approval" && a.Parts[i].ID == id {
			a.Parts[i].Data, replaced = data, true
		}
	}
	if !replaced {
		a.Parts = append(a.Parts, Part{Type: "data-approval", ID: id, Data: data})
	}
	t.out.send(chunk{"type": "data-approval", "id": id, "data": data})
}

// approvalTarget is what the approval acts on, for the frontend to show:
// the problem's "target" member when the gate sets one, else its
// target_type/target_id members, else the call's effective input (which
// names the target, e.g. {"invoice_id": …}).
func approvalTarget(pe *problem.Error, call capability.Call) any {
	if t, ok := pe.Extra["target"]; ok && t != nil {
		return t
	}
	if id, ok := pe.Extra["target_id"]; ok {
		return map[string]any{"type": pe.Extra["target_type"], "id": id}
	}
	return json.RawMessage(call.Input)
}

// toolError records a failed call with a message safe to show.
func (t *turn) toolError(p *Part, err error) {
	code, msg := t.errorFor(p, err)
	p.State, p.ErrorText, p.Output = StateOutputError, msg, nil
	p.ModelResult = mustJSON(map[string]any{"error": modelError(code, msg, err)})
	t.out.send(chunk{"type": "tool-output-error", "toolCallId": p.ToolCallID, "errorText": msg})
}

// modelError is what the model reads of a failed call: its code and
// message, and a refusal's fields each with its own code where it has
// them (INVOICE_INCOMPLETE's missing facts), so that the model can ask
// for each.
func modelError(code, msg string, err error) map[string]any {
	out := map[string]any{"code": code, "message": msg}
	if pe, ok := problem.As(err); ok && pe.Status < 500 && len(pe.Errors) > 0 {
		out["errors"] = pe.Errors
	}
	return out
}

// inputError records a call whose arguments cannot be used (not a JSON
// object, or cut off) as ai@7 does: an input error holding the arguments'
// text, which the model reads as a typed tool error.
func (t *turn) inputError(p *Part, input []byte, err error) {
	code, msg := t.errorFor(p, err)
	p.State, p.Input, p.ErrorText, p.Output = StateOutputError, input, msg, nil
	p.ModelResult = mustJSON(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	t.out.send(chunk{"type": "tool-input-error", "toolCallId": p.ToolCallID, "toolName": p.ToolName(), "input": json.RawMessage(input), "errorText": msg})
}

// errorFor is a failed call's code and a message safe to show: a typed
// problem's detail, or a generic sentence for anything internal, which is
// logged instead.
func (t *turn) errorFor(p *Part, err error) (string, string) {
	if pe, ok := problem.As(err); ok && pe.Status < 500 {
		msg := pe.Detail
		for _, f := range pe.Errors {
			msg += fmt.Sprintf("; %s %s", f.Field, f.Message)
		}
		return pe.Code, msg
	}
	t.s.cfg.Log.Error("steploop: tool failed", "conversation", t.lease.ID, "tool", p.ToolName(), "err", err)
	return "INTERNAL", "The tool failed with an internal error; it has been logged."
}
