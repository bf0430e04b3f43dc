package mcp

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/invoiced/invoiced/capability"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTools offers each capability whose risk offer admits as a tool: same
// name, title, description and schemas, hints from what it does. A
// capability without a title is refused: a client lists tools by their
// titles.
func (s *Service) addTools(srv *gomcp.Server, offer func(capability.Risk) bool) error {
	for _, d := range s.cfg.Registry.Descriptors() {
		if d.Title == "" {
			return fmt.Errorf("mcp: capability %s has no title", d.Name)
		}
		if !offer(d.Risk) {
			continue
		}
		s.risks[d.Name] = d.Risk
		t := &gomcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: d.InputSchema, Annotations: annotations(d)}
		if len(d.OutputSchema) > 0 {
			t.OutputSchema = d.OutputSchema
		}
		srv.AddTool(t, s.callTool)
	}
	return nil
}

// annotations are the MCP hints of a capability. They are hints a client
// may ignore; the gates are what hold. A read changes nothing, so a
// repeat has no further effect either; a change is destructive unless it
// only adds a record; only what mails someone reaches the open world.
func annotations(d capability.Descriptor) *gomcp.ToolAnnotations {
	openWorld := d.OpenWorld
	a := &gomcp.ToolAnnotations{Title: d.Title, OpenWorldHint: &openWorld}
	if d.Risk == capability.RiskRead {
		a.ReadOnlyHint, a.IdempotentHint = true, true
		return a
	}
	destructive := !d.Additive
	a.DestructiveHint = &destructive
	a.IdempotentHint = d.Idempotent
	return a
}

// callTool runs one tool call. The client's multi-round-trip fields
// (requestState, inputResponses) are never read: a confirmation counts
// only as the answer to an elicitation this server sent on this call.
func (s *Service) callTool(ctx context.Context, req *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
	c, err := callerOf(req.Extra)
	if err != nil {
		return s.errorResult(err), nil
	}
	call, err := s.cfg.Registry.Prepare(req.Params.Name, req.Params.Arguments)
	if err != nil {
		return s.errorResult(err), nil
	}
	call.Principal, call.Via = c.Principal, capability.PathMCP
	if err := c.recheck(s.cfg.Heartbeat); err != nil {
		return s.errorResult(err), nil
	}
	if s.risks[call.Name] == capability.RiskBound {
		return s.callBound(ctx, req, c, call), nil
	}
	runCtx, cancel := s.runCtx(ctx)
	defer cancel()
	out, err := s.invoke(runCtx, call)
	return s.result(call, out, err), nil
}

// callTimeout bounds one capability's run: a minute is more than any of
// them takes, and the TS client gives up on a call after 60 s.
const callTimeout = time.Minute

// runCtx is what a capability runs under once it starts: not the client's
// cancellation (its transaction may already be committing, and the result
// must say what it did; ADR-0011 #23), but a deadline and shutdown.
func (s *Service) runCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	base, cancelDeadline := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	run, cancel := context.WithCancel(base)
	stop := context.AfterFunc(s.stopping, cancel)
	return run, func() { stop(); cancel(); cancelDeadline() }
}

// invoke runs a prepared call, turning a panic in its handler into an
// error result instead of a crashed process (the SDK runs handlers on
// goroutines of its own, outside Echo's recovery).
func (s *Service) invoke(ctx context.Context, call capability.Call) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("capability %s panicked: %v\n%s", call.Name, r, debug.Stack())
		}
	}()
	return s.cfg.Registry.Invoke(ctx, call)
}
