package steploop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
)

// DefaultMaxSteps bounds the model steps of one request: 8 covers a lookup,
// a follow-up lookup and an answer with room to spare, and stops a model
// that loops on tool calls before it burns a budget.
const DefaultMaxSteps = 8

// DefaultLeaseTTL bounds one request's hold on a conversation; the request
// itself is cut leaseMargin earlier so it always ends before its lease does.
const DefaultLeaseTTL = 10 * time.Minute

// leaseMargin is how much sooner than its lease a request's run ends: time
// for the final write (5 s at most) with room to spare.
const leaseMargin = 30 * time.Second

// Config is what the step loop is built from.
type Config struct {
	// DB holds conversations (a pool: the loop runs its own statements).
	DB store.Executor
	// Model runs model steps; nil makes /v1/chat answer 503 naming the
	// settings to set, while the rest of the service works.
	Model model.Provider
	// Tools are the capabilities offered to the model.
	Tools Tools
	// Frontend are the tools the browser runs (at least ShowInvoice).
	Frontend []FrontendTool
	// Confirm is the confirm controller for bound capabilities; required
	// when Tools has any.
	Confirm Confirmer
	// System is the system prompt; empty uses DefaultSystemPrompt.
	System string
	// MaxSteps bounds model steps per request; 0 uses DefaultMaxSteps.
	MaxSteps int
	// LeaseTTL bounds a request; 0 uses DefaultLeaseTTL.
	LeaseTTL time.Duration
	// CredentialMaxAge is how long ago the request's credential may have
	// been checked when a tool runs; older, it is checked again first.
	// 0 uses DefaultCredentialMaxAge.
	CredentialMaxAge time.Duration
	// Log receives errors that clients only see as safe messages.
	Log *slog.Logger
}

// DefaultSystemPrompt tells the model what it operates and how approvals
// and confirmations answer.
const DefaultSystemPrompt = `You are the assistant of an invoicing back office. Use the tools to look ` +
	`up and change customers and invoices; never invent ids or amounts. Some tools ask the user to confirm ` +
	`in their browser first. Issuing and deleting invoices need an approver's decision in the back office: ` +
	`when a tool answers APPROVAL_REQUIRED, tell the user it waits for approval. Tool results with an ` +
	`"error" member say what happened and what to do next; follow them.`

// DefaultCredentialMaxAge bounds how long a turn acts on a credential
// checked once: a turn may run for minutes (slow models, tools, up to the
// lease), and a revoked token, a disabled user or a changed role must stop
// its tool calls within the 15 s the approvals event stream allows too.
// A turn that ends sooner, most of them, pays no extra statement.
const DefaultCredentialMaxAge = 15 * time.Second

// Service is the step loop: POST /v1/chat and GET /v1/conversations/{id}.
type Service struct {
	cfg        Config
	toolset    confirm.Toolset
	frontend   *capability.Registry
	risks      map[string]capability.Risk
	modelTools []model.Tool
	// stopping is cancelled (cause errShuttingDown) when the server
	// begins to shut down: every running turn, and any tool in it, ends.
	stopping context.Context
	stop     context.CancelCauseFunc
}

// errShuttingDown is why turns end when the server shuts down.
var errShuttingDown = errors.New("steploop: the server is shutting down")

// Shutdown ends every running turn: its model call and any running tool
// are cancelled, what completed is stored, its conversation is released
// and a client still connected is told to send its message again. Register
// it with http.Server.RegisterOnShutdown: Shutdown does not cancel request
// contexts, so a chat waiting on a slow model would otherwise hold the
// grace period and keep its conversation busy past a restart.
func (s *Service) Shutdown() { s.stop(errShuttingDown) }

// New checks cfg and builds the toolset offered to the model.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Tools == nil {
		return nil, errors.New("steploop: DB and Tools are required")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL <= leaseMargin {
		// Every run would start past its own deadline.
		return nil, fmt.Errorf("steploop: LeaseTTL %v must exceed the %v a run ends before its lease", cfg.LeaseTTL, leaseMargin)
	}
	if cfg.CredentialMaxAge <= 0 {
		cfg.CredentialMaxAge = DefaultCredentialMaxAge
	}
	if cfg.System == "" {
		cfg.System = DefaultSystemPrompt
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	fr, err := frontendRegistry(cfg.Frontend)
	if err != nil {
		return nil, fmt.Errorf("steploop: frontend tools: %w", err)
	}
	stopping, stop := context.WithCancelCause(context.Background())
	s := &Service{
		cfg:      cfg,
		stopping: stopping,
		stop:     stop,
		// The toolset runs remote with confirmations in wait mode, stated
		// explicitly: ADR-0005 (docs/adr/0005-confirmation-mode.md).
		toolset:  confirm.AgentToolset,
		frontend: fr,
		risks:    map[string]capability.Risk{},
	}
	for _, d := range cfg.Tools.Descriptors() {
		if _, dup := fr.Lookup(d.Name); dup {
			return nil, fmt.Errorf("steploop: %q is both a capability and a frontend tool", d.Name)
		}
		if d.Risk == capability.RiskBound && cfg.Confirm == nil {
			return nil, fmt.Errorf("steploop: bound capability %q needs a confirm controller", d.Name)
		}
		s.risks[d.Name] = d.Risk
		s.modelTools = append(s.modelTools, model.Tool{Name: d.Name, Description: d.Description, Parameters: d.InputSchema})
	}
	for _, d := range fr.Descriptors() {
		s.modelTools = append(s.modelTools, model.Tool{Name: d.Name, Description: d.Description, Parameters: d.InputSchema})
	}
	return s, nil
}

// Toolset is how the tools offered to the model run: remote topology,
// confirmations in wait mode (ADR-0005).
func (s *Service) Toolset() confirm.Toolset { return s.toolset }

func (s *Service) isFrontend(name string) bool {
	_, ok := s.frontend.Lookup(name)
	return ok
}

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

// stepText streams one model step's text into a text part of the answer.
// It opens the part at the first character, holds back a character split
// across two deltas until the rest arrives (each delta is JSON-encoded on
// its own, which would turn either half into U+FFFD), and stores exactly
// what the client is sent: U+0000, which PostgreSQL cannot store, and
// invalid UTF-8 become U+FFFD. Otherwise the client's copy would differ
// from the stored one and its next message be refused.
type stepText struct {
	t     *turn
	idx   int // the part's index in the answer; -1 until opened
	id    string
	carry string
}

func (s *stepText) write(delta string) {
	delta, s.carry = s.carry+delta, ""
	if n := partialRuneTail(delta); n > 0 {
		delta, s.carry = delta[:len(delta)-n], delta[len(delta)-n:]
	}
	s.emit(delta)
}

func (s *stepText) emit(delta string) {
	delta = storableText(delta)
	if delta == "" {
		return
	}
	t := s.t
	a := t.asst()
	if s.idx < 0 {
		t.texts++
		s.id = fmt.Sprintf("text-%d", t.texts)
		t.out.send(chunk{"type": "text-start", "id": s.id})
		a.Parts = append(a.Parts, Part{Type: "text", Text: strPtr(""), State: "streaming"})
		s.idx = len(a.Parts) - 1
	}
	*a.Parts[s.idx].Text += delta
	t.out.send(chunk{"type": "text-delta", "id": s.id, "delta": delta})
	t.out.flushSoon()
}

// end sends what was held back and closes the part: the client marks it
// done at text-end, so the stored copy does too, whether or not the step
// then failed; a client that went away never sees text-end and keeps it
// streaming, and so does the stored copy.
func (s *stepText) end() {
	if s.carry != "" {
		c := s.carry
		s.carry = ""
		s.emit(c)
	}
	if s.idx >= 0 {
		s.t.out.send(chunk{"type": "text-end", "id": s.id})
		if !s.t.clientGone() {
			s.t.asst().Parts[s.idx].State = "done"
		}
	}
}

// storableText is str as PostgreSQL can store it and JSON carries it
// unchanged: U+0000 and invalid UTF-8 become U+FFFD.
func storableText(str string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(str, "\x00", "\uFFFD"), "\uFFFD")
}

// partialRuneTail is the length of an incomplete UTF-8 sequence ending
// str (a character whose remaining bytes have not arrived), or 0.
func partialRuneTail(str string) int {
	for i := 1; i < utf8.UTFMax && i <= len(str); i++ {
		if utf8.RuneStart(str[len(str)-i]) {
			if utf8.FullRuneInString(str[len(str)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}

// dispatch emits a tool call and handles it by kind; it reports whether
// the call waits for the browser.
func (t *turn) dispatch(tc model.ToolCall) bool {
	id := tc.ID
	if id == "" || t.part(id) != nil || t.seenAnywhere(id) {
		id = "call_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	}
	args := strings.TrimSpace(tc.Arguments)
	validJSON := args != "" && json.Valid([]byte(args)) && strings.HasPrefix(args, "{")
	// Arguments jsonb cannot store, or a JavaScript client cannot send
	// back as they are (a number past ±1.8e308 comes back as null), are
	// kept as text, like arguments that are not JSON: stored as given, the
	// answer could not be saved or the conversation not continued.
	unstorable := ""
	if validJSON {
		unstorable = jsonUnstorable(json.RawMessage(args))
	}
	var input json.RawMessage
	switch {
	case args == "":
		input = json.RawMessage("{}")
		validJSON = true
	case validJSON && unstorable == "":
		input = json.RawMessage(args)
	default:
		input = mustJSON(storableText(tc.Arguments))
	}
	a := t.asst()
	a.Parts = append(a.Parts, Part{Type: "tool-" + tc.Name, ToolCallID: id, State: StateInputAvailable, Input: input})
	t.out.send(chunk{"type": "tool-input-available", "toolCallId": id, "toolName": tc.Name, "input": input})
	p := t.part(id)
	// The tool may take a while (a bound one waits on the confirm
	// controller's statements): show the call first.
	t.out.flushSoon()
	if err := t.notRun(); err != nil {
		t.toolError(p, err)
		return false
	}
	if unstorable != "" {
		t.toolError(p, problem.Invalid("input", "the tool arguments %s", unstorable))
		return false
	}
	if !validJSON {
		t.toolError(p, problem.Invalid("input", "the tool arguments are not a JSON object"))
		return false
	}
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
	t.stopped = true
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

var approvalGuidance = map[string]string{
	"APPROVAL_REQUIRED": "This needs an approver's decision in the back office and was not done yet. Tell the user it is waiting for approval; once it is approved, call the tool again with the same input.",
	"APPROVAL_DENIED":   "An approver denied this, so it was not done. Tell the user; do not retry unless they ask for a changed request.",
	"APPROVAL_EXPIRED":  "The approval expired before it was used, so nothing was done. Calling the tool again with the same input requests a new approval.",
	"APPROVAL_STALE":    "The target changed after approval was requested, so nothing was done. Calling the tool again requests approval of the current version.",
}

func (t *turn) approvalResult(p *Part, call capability.Call, pe *problem.Error) {
	approvalID, status := pe.Extra["approval_id"], pe.Extra["approval_status"]
	msg := approvalGuidance[pe.Code]
	if msg == "" {
		msg = pe.Detail
	}
	t.outputAvailable(p, map[string]any{"error": map[string]any{
		"code": pe.Code, "approval_id": approvalID, "status": status, "message": msg,
	}})
	data := mustJSON(map[string]any{"approval_id": approvalID, "status": status, "capability": call.Name, "target": approvalTarget(pe, call)})
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

// toolError records a failed call with a message safe to show: a typed
// problem's detail, or a generic sentence for anything internal, which is
// logged instead.
func (t *turn) toolError(p *Part, err error) {
	code, msg := "INTERNAL", "The tool failed with an internal error; it has been logged."
	if pe, ok := problem.As(err); ok && pe.Status < 500 {
		code, msg = pe.Code, pe.Detail
		for _, f := range pe.Errors {
			msg += fmt.Sprintf("; %s %s", f.Field, f.Message)
		}
	} else {
		t.s.cfg.Log.Error("steploop: tool failed", "conversation", t.lease.ID, "tool", p.ToolName(), "err", err)
	}
	p.State, p.ErrorText, p.Output = StateOutputError, msg, nil
	p.ModelResult = mustJSON(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	t.out.send(chunk{"type": "tool-output-error", "toolCallId": p.ToolCallID, "errorText": msg})
}
