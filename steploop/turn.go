package steploop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/steploop/model"
)

// stream runs the loop's steps on the opened conversation and writes them
// to w as a UI message stream, and to the run's log. The run does not
// follow the request: a client that goes away is written no more, and the
// run goes on to its end (its answer, the step limit, RunTimeout, a stop,
// a shutdown, or its lease lost), storing its answer.
func (s *Service) stream(ctx context.Context, w http.ResponseWriter, p identity.Principal, o opened) {
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RunTimeout)
	defer cancel()
	runCtx, cancelRun := context.WithCancelCause(runCtx)
	defer cancelRun(nil)
	defer context.AfterFunc(s.stopping, func() { cancelRun(errShuttingDown) })()
	defer s.runs.add(o.run.ID, o.lease, cancelRun)()
	out := newSSE(w)
	log := &runLog{s: s, run: o.run.ID, conv: o.lease.ID, ended: func() { cancelRun(errLeaseLostCause) }}
	out.log = log
	t := &turn{s: s, ctx: runCtx, lease: o.lease, p: p, msgs: o.msgs, ai: len(o.msgs) - 1, pos: o.run.Position,
		out: out, log: log, attempted: map[string]bool{}}
	t.meta = *t.asst().Metadata
	for _, part := range t.asst().Parts {
		if part.Type == "text" || part.Type == "reasoning" {
			t.texts++
		}
	}
	t.runGuarded(o.delta)
	t.settle()
	t.end()
}

func newMessageID() string { return "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "") }

// turn is one run of the loop on a leased conversation.
type turn struct {
	s     *Service
	ctx   context.Context
	lease *Lease
	p     identity.Principal
	// msgs is the model's context: the stored transcript within the
	// context budget, ending with the assistant message this run writes
	// (msgs[ai], at position pos).
	msgs  []Message
	ai    int
	pos   int
	out   *sse
	log   *runLog
	texts int
	// meta is the answer's metadata as the run's start chunk carried it;
	// usage is what this run's steps cost, where the endpoint said.
	meta  Metadata
	usage *model.Usage
	// finishReason is set when the loop ends normally, errorText when it
	// cannot (a model step failed, a shutdown, …); aborted when a stop
	// request ended it. end writes the closing chunks once the answer is
	// stored.
	finishReason, errorText string
	aborted                 bool
	// halted ends the loop after a credential check failed or the lease
	// was lost.
	halted bool
	// attempted holds the browser answers (by tool call id) this turn
	// began to act on.
	attempted map[string]bool
}

func (t *turn) asst() *Message { return &t.msgs[t.ai] }

// save stores the assistant message mid-run, after a tool with effects
// ran, so a crash cannot lose the record of an effect. What is buffered of
// the stream goes to the run's log in the same statement, so the log
// never holds less than the transcript.
func (t *turn) save() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	err := t.out.flushWith(func(batch []byte) error {
		logged, err := messagePutHeld(ctx, t.s.cfg.DB, t.lease, t.pos, *t.asst(), putHeld,
			runWrite{run: t.log.run, seq: t.log.seq, batch: batch})
		if logged && len(batch) > 0 {
			t.log.seq++
		}
		return err
	})
	if err != nil {
		t.s.cfg.Log.Error("steploop: save message", "conversation", t.lease.ID, "err", err)
		if problem.HasCode(err, CodeConversationBusy) {
			// Another request holds the conversation now: no more
			// effects whose record could not be kept.
			t.halted = true
			t.errorText = "This request lost its hold on the conversation; reload it before sending another message."
		}
	}
}

func (t *turn) part(toolCallID string) *Part {
	ps := t.asst().Parts
	for i := range ps {
		if ps[i].IsTool() && ps[i].ToolCallID == toolCallID {
			return &ps[i]
		}
	}
	return nil
}

// runGuarded is run, except that a panic in it (a model provider's, a
// bug of the loop's; tool handlers have their own guard) ends the turn
// like a failed model step: what completed is stored, the lease released
// and the client told, instead of a stream that just stops and a
// conversation busy until its lease expires.
func (t *turn) runGuarded(d Delta) {
	defer func() {
		if r := recover(); r != nil {
			t.s.cfg.Log.Error("steploop: the turn panicked", "conversation", t.lease.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			t.finishReason, t.aborted = "", false
			t.errorText = "The server failed while answering; the error has been logged. Send the message again to retry."
			t.interrupt()
		}
	}()
	t.run(d)
}

// codeNoResult is a call that ended without a result: its effect, if it
// has one, is unknown.
const codeNoResult = "NO_RESULT"

// interrupt ends as tool errors the answer's calls that a failed turn
// left neither resolved nor waiting for the browser's confirmation: stored
// unresolved, a server tool's call could never be answered, and every
// later message would be refused. The client gets the same outcome in the
// stream, so its copy stays equal to the stored one.
func (t *turn) interrupt() {
	ps := t.asst().Parts
	for i := range ps {
		p := &ps[i]
		switch {
		case !p.IsTool():
		case p.State == StateInputStreaming:
			t.inputError(p, mustJSON(""), errCutCall)
		case p.State == StateApprovalResponded && !t.attempted[p.ToolCallID]:
			// Its confirmation was never used: it did not run.
			t.toolError(p, t.notRunError())
		case p.State == StateInputAvailable || p.State == StateApprovalResponded:
			t.toolError(p, interruptedError)
		}
	}
}

// interruptedError is a call cut off before it produced a result: by a
// failed turn, its time limit or a shutdown. Its transaction may have
// committed as it was cut, so the model must not take it for a failure.
var interruptedError = problem.New(http.StatusConflict, codeNoResult,
	"The call was interrupted before it produced a result; whether it took effect is unknown. Check before retrying.")

// interrupted is err, or interruptedError when ctx (the call's) ended and
// err is not a typed answer of the capability: then the error is the
// cancellation's, and the call's outcome unknown.
func interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if _, ok := problem.As(err); ok {
		return err
	}
	return interruptedError
}

// haltedError is a call the turn did not run because it had stopped.
var haltedError = problem.New(http.StatusConflict, codeNoResult, "Not run: this request stopped before the call (see the error that ends it).")

// endedError is a call the turn did not start because the run had ended:
// its time was up, or the server is shutting down.
var endedError = problem.New(http.StatusConflict, codeNoResult, "Not run: the request ended (its time was up, or the server is restarting) before the call started.")

// stoppedError is a call the turn did not start because the user stopped
// the answer.
var stoppedError = problem.New(http.StatusConflict, codeNoResult, "Not run: the user stopped the answer before the call started.")

// notRun says why the turn starts no further call or model step, or is
// nil. A call already running when the run is stopped finishes (toolCtx);
// none starts after. The shutdown signal is read directly too: the run's
// context learns of it a moment later (context.AfterFunc).
func (t *turn) notRun() error {
	switch {
	case t.halted:
		return haltedError
	case t.ctx.Err() != nil, t.s.stopping.Err() != nil:
		return t.notRunError()
	}
	return nil
}

// notRunError is the error of a call the run will not start.
func (t *turn) notRunError() error {
	switch {
	case t.halted:
		return haltedError
	case errors.Is(context.Cause(t.ctx), errStopped):
		return stoppedError
	case t.ctx.Err() != nil, t.s.stopping.Err() != nil:
		return endedError
	}
	return haltedError
}

// stoppedByUser reports whether a stop request ended the run.
func (t *turn) stoppedByUser() bool { return errors.Is(context.Cause(t.ctx), errStopped) }

// run sends the start chunk, acts on the browser's answers (already
// applied to the message by open) and runs model steps.
func (t *turn) run(d Delta) {
	t.out.clientOnly(frame(startChunk(*t.asst())))
	// Every answer is recorded first, as the client already holds it: a
	// turn that fails while handling one then still ends the others, in
	// the stream and the transcript alike (interrupt).
	for _, a := range d.Approvals {
		t.answerApproval(a)
	}
	if len(d.Approvals) > 0 {
		t.save()
	}
	if len(pendingCalls(*t.asst())) > 0 {
		t.finish("tool-calls")
		return
	}
	t.steps()
}

// finish ends the loop normally; end sends the finish chunk.
func (t *turn) finish(reason string) { t.finishReason = reason }

// textFinishReason is the UI stream's finish reason for a step that ended
// in text: a client must be able to tell an answer cut by the token limit
// or a content filter from a complete one.
func textFinishReason(provider string) string {
	switch provider {
	case "length":
		return "length"
	case "content_filter":
		return "content-filter"
	default:
		return "stop"
	}
}

func (t *turn) steps() {
	// The messages before the answer do not change during the run: their
	// transcript is built once.
	earlier := Transcript(t.msgs[:t.ai])
	for step := 0; step < t.s.cfg.MaxSteps; step++ {
		if t.notRun() != nil {
			return
		}
		msgs := append(earlier[:len(earlier):len(earlier)], Transcript(t.msgs[t.ai:])...)
		req := model.Request{System: t.s.cfg.System, Messages: msgs, Tools: t.s.modelTools}
		t.out.send(chunk{"type": "start-step"})
		a := t.asst()
		a.Parts = append(a.Parts, Part{Type: "step-start"})
		t.out.flushSoon()
		out := newStepOutput(t)
		res, err := t.s.cfg.Model.Stream(t.ctx, req, out)
		out.end(err)
		t.addUsage(res.Usage)
		if err != nil {
			if t.ctx.Err() != nil {
				// Stopped, out of time or shutting down: the model call
				// is cancelled and what completed is kept.
				return
			}
			t.s.cfg.Log.Error("steploop: model step failed", "conversation", t.lease.ID, "err", err)
			t.errorText = "The model request failed; the error has been logged. Send the message again to retry."
			return
		}
		if len(res.ToolCalls) == 0 {
			t.out.send(chunk{"type": "finish-step"})
			t.finish(textFinishReason(res.FinishReason))
			return
		}
		if t.callSteps(res.ToolCalls, out) {
			return
		}
	}
	// Step limit: the results are stored; the model reads them on the
	// next request (a bare resubmission continues the loop).
	t.finish("tool-calls")
}

// callSteps handles a step's tool calls; it reports whether the loop ends
// here (a call waits for the browser).
func (t *turn) callSteps(calls []model.ToolCall, out *stepOutput) bool {
	wait, effects := false, false
	for i, tc := range calls {
		if t.dispatch(tc, out.calls[i]) {
			wait = true
		}
		if r, ok := t.s.risks[tc.Name]; ok && r != capability.RiskRead {
			effects = true
		}
	}
	t.out.send(chunk{"type": "finish-step"})
	if effects && !wait {
		t.save()
	}
	if wait {
		t.finish("tool-calls")
	}
	return wait
}
