// Package confirm is the frontend confirmation of ADR-0005
// (docs/adr/0005-confirmation-mode.md): a registry of single-use,
// input-bound, expiring confirmations, and the controller that the step loop
// runs every model tool call of a `bound` capability through. It knows
// nothing of HTTP or models.
//
// # The API the step loop codes against
//
//	ctl, err := confirm.NewController(confirm.Config{
//		Registry: confirm.NewPostgres(pool),        // confirm.NewMemory() in unit tests
//		Mode:     confirm.AgentToolset.Confirmations, // ModeWait, stated explicitly
//		// TTL (default 10 min), Now (default time.Now) are optional.
//	})
//
//	out, err := ctl.Call(ctx, confirm.Request{
//		Capability:     "send-reminder",
//		InputHash:      call.InputHash,   // recomputed from the SERVER's stored tool call
//		ConversationID: conv.ID,
//		ToolCallID:     toolCallID,
//		Principal:      principal.UserID,
//		Evidence:       nil,              // or &confirm.Evidence{ConfirmationID: approval.id, Approved: approval.approved, Reason: approval.reason}
//	}, func(ctx context.Context) (any, error) { return handler(ctx, call) })
//
// err is non-nil only for infrastructure failures (database down, a
// malformed Request); every answer the model must read is in out:
//
//   - out.Pause != nil (wait mode, no evidence): a confirmation was minted.
//     Emit `tool-approval-request` with approvalId = out.Pause.ID and
//     toolCallId = the call's id, then close the step's stream.
//   - out.Result != nil: a typed result for the model, the tool call's output
//     (`tool-output-available` with out.Result as output):
//     {"error":{"code":"CONFIRMATION_REQUIRED"|"CONFIRMATION_INVALID","reason":…,"message":…}}.
//     CONFIRMATION_REQUIRED is the two-phase mode's answer and names the
//     minted confirmation in "confirmation_id".
//   - out.Ran: the evidence was consumed and run was called exactly once;
//     out.Output and out.Err are what it returned.
//
// # Evidence rules
//
// Evidence is consumed by one atomic UPDATE … WHERE used_at IS NULL, so of
// any number of concurrent presentations, on any replica, exactly one runs.
// The consumption matches id, conversation, principal and capability: evidence
// of another conversation, another principal or another capability is
// `unknown` and is NOT consumed (a stranger cannot burn it). Matched evidence is
// consumed whatever happens next: a denial (`denied`), an expired confirmation
// (`expired`) and a different effective-input hash (`input_mismatch`) all use
// it up, and presenting it again is `replayed`. The tool call id is recorded,
// not matched, so that two-phase evidence can be attached to the model's retry,
// which is a new tool call.
//
// Call the controller only for RiskBound capabilities on the agent path.
// Read capabilities need no pause; consequential ones are gated by a durable
// approval (ADR-0010) on every path; and a contextual binding skips frontend
// confirmation altogether, which is why nothing consequential relies on it.
//
// Expired rows are protocol state, not decisions: Controller.Sweep (app
// runs it every 5 minutes) deletes them once they are Retention (default
// 1 h) past expiry, so a late answer still reads `expired` rather than
// `unknown` for that hour.
package confirm
