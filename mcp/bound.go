package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// callBound runs a bound call through frontend confirmation (ADR-0005).
// A client that declared elicitation gets wait mode over MCP: this call
// mints a confirmation, asks the user with elicitation/create on its own
// stream, presents the answer as evidence to the same controller the step
// loop uses (single use, bound to the effective input, expiring), and
// gives one result. A client without elicitation gets two-phase's
// CONFIRMATION_REQUIRED.
func (s *Service) callBound(ctx context.Context, req *gomcp.CallToolRequest, c caller, call capability.Call) *gomcp.CallToolResult {
	r := confirm.Request{
		Capability: call.Name, InputHash: call.InputHash,
		// One session is one conversation: evidence minted for a call of
		// this session is consumed only by this session.
		ConversationID: "mcp:" + req.Session.ID(),
		// The JSON-RPC id is not exposed to handlers; a fresh id names
		// this call in the confirmation row.
		ToolCallID: "mcp_" + confirm.NewID()[:22],
		Principal:  c.UserID,
	}
	run := func(ctx context.Context) (any, error) { return s.invoke(ctx, call) }
	// The SDK runs handlers under the session's context, not this POST's,
	// and ends them only when the client sends notifications/cancelled. A
	// client whose stream broke without one (a dropped connection, a
	// killed process) is gone as well: the question must end with its
	// request, or it would wait out the confirmation's 10 minutes and an
	// answer arriving meanwhile would still run the call.
	ctx, cancelAsk := context.WithCancel(ctx)
	defer cancelAsk()
	defer context.AfterFunc(c.reqCtx, cancelAsk)()
	if !elicits(req.Session) {
		out, err := s.twoPhase.Call(ctx, r, run)
		if err != nil {
			return s.errorResult(err)
		}
		return typedResult(noElicitation(out.Result))
	}
	out, err := s.wait.Call(ctx, r, run)
	if err != nil {
		return s.errorResult(err)
	}
	if out.Pause == nil {
		return s.errorResult(errors.New("mcp: wait mode minted no confirmation"))
	}
	ev, res, gone := s.ask(ctx, req.Session, call, out.Pause)
	if res != nil {
		return res
	}
	// A confirmation spent because the client left acts for no one, so
	// no credential needs checking (it may be the request that ended).
	if !gone {
		if err := c.recheck(s.cfg.Heartbeat); err != nil {
			return s.errorResult(err)
		}
	}
	runCtx, cancel := s.runCtx(ctx)
	defer cancel()
	r.Evidence = ev
	out, err = s.wait.Call(runCtx, r, run)
	switch {
	case err != nil:
		return s.errorResult(err)
	case out.Ran:
		return s.result(call, out.Output, out.Err)
	case out.Result != nil:
		return typedResult(out.Result)
	}
	return s.errorResult(errors.New("mcp: the confirm controller returned no outcome"))
}

// elicits reports whether the session's client declared form elicitation
// when it initialized.
func elicits(ss *gomcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	// No mode named means form, for clients older than modes.
	return e.Form != nil || e.URL == nil
}

// noElicitation rewrites CONFIRMATION_REQUIRED's advice for a client that
// has no way to ask its user: calling again would only ask again.
func noElicitation(res *confirm.TypedResult) *confirm.TypedResult {
	if res == nil {
		return res
	}
	out := *res
	out.Error.Message = "This call needs the user's confirmation and was not done: this MCP client cannot ask the user (it did not declare the elicitation capability). Tell the user what it would do; they can confirm it from a client that supports elicitation, or do it in the back office."
	return &out
}

// ask shows the user the confirmation form and returns the evidence their
// answer makes, or the result to give when there is no answer to present:
// the confirmation expired first, or the server is shutting down (nothing
// was consumed or run; the row expires). gone says the client went away
// (its request ended or it cancelled the call) before an answer came:
// nobody said yes, so the evidence spends the confirmation as declined.
func (s *Service) ask(ctx context.Context, ss *gomcp.ServerSession, call capability.Call, conf *confirm.Confirmation) (ev *confirm.Evidence, res *gomcp.CallToolResult, gone bool) {
	ectx, cancel := context.WithDeadline(ctx, conf.ExpiresAt)
	defer cancel()
	stop := context.AfterFunc(s.stopping, cancel)
	defer stop()
	ans, err := ss.Elicit(ectx, &gomcp.ElicitParams{Mode: "form", Message: s.formMessage(call), RequestedSchema: confirmSchema(call.Name)})
	switch {
	case err == nil:
		return evidence(conf.ID, ans), nil, false
	case s.stopping.Err() != nil:
		return nil, s.errorResult(context.Canceled), false
	case ctx.Err() != nil:
		return &confirm.Evidence{ConfirmationID: conf.ID, Reason: ReasonClientGone}, nil, true
	case errors.Is(ectx.Err(), context.DeadlineExceeded):
		return nil, typedResult(confirm.Invalid(confirm.ReasonExpired, conf.ID)), false
	}
	// The client answered with an error or a form that does not fit the
	// schema: nobody said yes, so the confirmation is spent as declined.
	s.cfg.Log.Warn("mcp: elicitation failed", "capability", call.Name, "err", err)
	return &confirm.Evidence{ConfirmationID: conf.ID, Reason: "the client could not ask the user"}, nil, false
}

// ReasonClientGone is the decision reason of a confirmation spent because
// the client went away before its user answered.
const ReasonClientGone = "the client went away before the user answered"

// evidence is the user's answer as the controller takes it: only an
// accepted form whose confirm is true approves; a form the user dismissed
// (cancel, as against decline) is a cancellation.
func evidence(id string, ans *gomcp.ElicitResult) *confirm.Evidence {
	ev := &confirm.Evidence{ConfirmationID: id, Cancelled: ans.Action == "cancel"}
	if ans.Action == "accept" {
		ev.Approved, _ = ans.Content["confirm"].(bool)
		ev.Reason, _ = ans.Content["reason"].(string)
	}
	return ev
}

// formMessage names the capability and shows the exact effective input
// the confirmation binds to.
func (s *Service) formMessage(call capability.Call) string {
	desc := ""
	if c, ok := s.cfg.Registry.Lookup(call.Name); ok {
		desc = c.Description
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, call.Input, "", "  "); err != nil {
		pretty.Write(call.Input)
	}
	return fmt.Sprintf("Confirm %s?\n\n%s\n\nInput:\n%s", call.Name, desc, pretty.String())
}

// confirmSchema is the yes/no form: one required boolean, and an optional
// reason passed on with a refusal.
func confirmSchema(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type":     "object",
		"required": []string{"confirm"},
		"properties": map[string]any{
			"confirm": map[string]any{"type": "boolean", "title": "Run " + name + " with this input", "default": false},
			"reason":  map[string]any{"type": "string", "title": "Reason (optional)", "maxLength": 1000},
		},
	})
	return b
}
