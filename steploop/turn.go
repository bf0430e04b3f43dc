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
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// stream runs the loop's steps for the leased conversation and writes them
// to w as a UI message stream; a new user message gets a new assistant
// message to answer in. The run ends before the lease does (leaseMargin),
// so no other replica can take the conversation while this one writes.
func (s *Service) stream(ctx context.Context, w http.ResponseWriter, p identity.Principal, o opened) {
	lease, stored, delta := o.lease, o.stored, o.delta
	if delta.NewUser != nil {
		stored = append(stored, *delta.NewUser, Message{ID: newMessageID(), Role: "assistant", Parts: []Part{}})
	}
	runCtx, cancel := context.WithTimeout(ctx, s.cfg.LeaseTTL-leaseMargin)
	defer cancel()
	runCtx, cancelRun := context.WithCancelCause(runCtx)
	defer cancelRun(nil)
	defer context.AfterFunc(s.stopping, func() { cancelRun(errShuttingDown) })()
	out := newSSE(w)
	defer out.close()
	t := &turn{s: s, ctx: runCtx, lease: lease, p: p, msgs: stored, ai: len(stored) - 1, out: out, attempted: map[string]bool{}}
	t.runGuarded(delta)
	if t.finishReason == "" && t.errorText == "" && ctx.Err() == nil {
		// The run's own limit or a shutdown, not the client going away:
		// the client is still there and must learn that the answer stopped.
		switch {
		case s.stopping.Err() != nil:
			t.errorText = "The server is restarting; what was done is stored. Send a message to continue."
		case errors.Is(context.Cause(runCtx), context.DeadlineExceeded):
			t.errorText = "The answer took longer than one request may run; what was done is stored. Send a message to continue."
		}
	}
	t.end()
}

// open leases the conversation, reconciles the client's list with the
// stored transcript and stores the new user message. A new chat (one user
// message) takes one statement; otherwise one transaction does it all, so
// a refused request leaves nothing behind, not even a new conversation or
// a held lease.
func (s *Service) open(ctx context.Context, id string, p identity.Principal, client []clientMessage) (opened, error) {
	if len(client) == 1 {
		if d, err := Reconcile(nil, client, s.isFrontend); err == nil && d.NewUser != nil {
			l, ok, err := ConversationCreateWithMessage(ctx, s.cfg.DB, id, p.UserID, s.cfg.LeaseTTL, *d.NewUser)
			if err != nil {
				return opened{}, err
			}
			if ok {
				return opened{lease: l, delta: d}, nil
			}
		}
	}
	return store.WithTxResult(ctx, s.cfg.DB, func(ctx context.Context, tx pgx.Tx) (opened, error) {
		lease, err := ConversationAcquire(ctx, tx, id, p.UserID, s.cfg.LeaseTTL)
		if err != nil {
			return opened{}, err
		}
		var stored []Message
		if !lease.created {
			if stored, err = MessageList(ctx, tx, lease.ID); err != nil {
				return opened{}, err
			}
		}
		delta, err := Reconcile(stored, client, s.isFrontend)
		if err != nil {
			return opened{}, err
		}
		if delta.NewUser != nil {
			if err := MessagePut(ctx, tx, lease.ID, len(stored), *delta.NewUser); err != nil {
				return opened{}, err
			}
		}
		return opened{lease: lease, stored: stored, delta: delta}, nil
	})
}

// opened is a conversation open for a turn: its lease, the stored
// transcript and what the client's list adds to it.
type opened struct {
	lease  *Lease
	stored []Message
	delta  Delta
}

func newMessageID() string { return "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "") }

// turn is one request running the loop on a leased conversation.
type turn struct {
	s     *Service
	ctx   context.Context
	lease *Lease
	p     identity.Principal
	msgs  []Message
	ai    int // index of the assistant message this request writes
	out   *sse
	texts int
	// finishReason is set when the loop ends normally, errorText when a
	// model step failed; end writes either once the answer is stored.
	finishReason, errorText string
	// stopped ends the loop after a credential check failed or the lease
	// was lost.
	stopped bool
	// attempted holds the browser answers (by tool call id) this turn
	// began to act on.
	attempted map[string]bool
}

func (t *turn) asst() *Message { return &t.msgs[t.ai] }

// save stores the assistant message mid-request, after a tool with
// effects ran, so a crash cannot lose the record of an effect; it runs
// even when the client has gone.
func (t *turn) save() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	if err := MessagePutLeased(ctx, t.s.cfg.DB, t.lease, t.ai, *t.asst()); err != nil {
		t.s.cfg.Log.Error("steploop: save message", "conversation", t.lease.ID, "err", err)
		if problem.HasCode(err, CodeConversationBusy) {
			// Another request holds the conversation now: no more
			// effects whose record could not be kept.
			t.stopped = true
			t.errorText = "This request lost its hold on the conversation; reload it before sending another message."
		}
	}
}

// finalize stores the assistant message and releases the lease in one
// statement (one round trip and one commit per request end); what
// completed is kept even when the client has gone. It reports whether the
// message was stored.
func (t *turn) finalize() bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	err := MessagePutRelease(ctx, t.s.cfg.DB, t.lease, t.ai, *t.asst())
	if err != nil {
		t.s.cfg.Log.Error("steploop: save message", "conversation", t.lease.ID, "err", err)
		if err := ConversationRelease(ctx, t.s.cfg.DB, t.lease); err != nil {
			t.s.cfg.Log.Error("steploop: release conversation", "conversation", t.lease.ID, "err", err)
		}
		return false
	}
	return true
}

// end stores the answer, then tells the client how the request ended:
// finish, or an error chunk when a model step failed or the answer could
// not be stored (the client's copy is then ahead of the server's and must
// be reloaded). [DONE] thus always follows the stored transcript.
func (t *turn) end() {
	stored := t.finalize()
	switch {
	case !stored:
		t.out.send(chunk{"type": "error", "errorText": "The answer could not be saved; the error has been logged. " +
			"Reload the conversation before sending another message."})
	case t.errorText != "":
		t.out.send(chunk{"type": "error", "errorText": t.errorText})
	case t.finishReason != "":
		t.out.send(chunk{"type": "finish", "finishReason": t.finishReason})
	default:
		return // the client went away
	}
	t.out.done()
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
			t.finishReason = ""
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
		case p.State == StateApprovalResponded && !t.attempted[p.ToolCallID]:
			// Its confirmation was never used: it did not run.
			t.toolError(p, stoppedError)
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

// stoppedError is a call the turn did not run because it had stopped.
var stoppedError = problem.New(http.StatusConflict, codeNoResult, "Not run: this request stopped before the call (see the error that ends it).")

// endedError is a call the turn did not start because the request had
// ended: its client went away, or its time was up.
var endedError = problem.New(http.StatusConflict, codeNoResult, "Not run: the request ended (its client went away or its time was up) before the call started.")

// clientGone reports whether the turn ended because its client went away
// (not its time limit, not a shutdown, with the client still reading).
func (t *turn) clientGone() bool {
	return errors.Is(context.Cause(t.ctx), context.Canceled)
}

// notRun says why the turn starts no further call or model step, or is
// nil. A call already running when the client leaves finishes (toolCtx);
// none starts after. The shutdown signal is read directly too: the run's
// context learns of it a moment later (context.AfterFunc).
func (t *turn) notRun() error {
	switch {
	case t.stopped:
		return stoppedError
	case t.ctx.Err() != nil, t.s.stopping.Err() != nil:
		return endedError
	}
	return nil
}

// run applies the reconciled delta and runs model steps.
func (t *turn) run(d Delta) {
	t.out.send(chunk{"type": "start", "messageId": t.asst().ID})
	for _, o := range d.Outputs {
		p := t.part(o.ToolCallID)
		if o.IsError {
			p.State, p.ErrorText = StateOutputError, o.ErrorText
		} else {
			p.State, p.Output = StateOutputAvailable, o.Output
		}
	}
	// Every answer is recorded first, as the client already holds it: a
	// turn that fails while handling one then still ends the others, in
	// the stream and the transcript alike (interrupt).
	for _, a := range d.Approvals {
		p := t.part(a.ToolCallID)
		approved := a.Approved
		p.State = StateApprovalResponded
		p.Approval = &PartApproval{ID: a.ApprovalID, Approved: &approved, Reason: a.Reason}
	}
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
	for step := 0; step < t.s.cfg.MaxSteps; step++ {
		if t.notRun() != nil {
			return
		}
		req := model.Request{System: t.s.cfg.System, Messages: Transcript(t.msgs), Tools: t.s.modelTools}
		t.out.send(chunk{"type": "start-step"})
		a := t.asst()
		a.Parts = append(a.Parts, Part{Type: "step-start"})
		t.out.flushSoon()
		text := &stepText{t: t, idx: -1}
		res, err := t.s.cfg.Model.Stream(t.ctx, req, func(delta string) error {
			text.write(delta)
			return nil
		})
		text.end()
		if err != nil {
			if t.ctx.Err() != nil {
				// The client went away: the model call is cancelled and
				// what completed is kept (finalize stores it).
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
		wait, effects := false, false
		for _, tc := range res.ToolCalls {
			if t.dispatch(tc) {
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
			return
		}
	}
	// Step limit: the results are stored; the model reads them on the
	// next request (a bare resubmission continues the loop).
	t.finish("tool-calls")
}
