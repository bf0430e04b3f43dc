package steploop

import (
	"encoding/json"
	"strings"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
)

// contentParts drops step-start parts: they carry nothing, and a client
// that lost the connection may hold one more or one fewer than the server.
func contentParts(ps []Part) []Part {
	out := make([]Part, 0, len(ps))
	for _, p := range ps {
		if p.Type != "step-start" {
			out = append(out, p)
		}
	}
	return out
}

// compareMessage checks that the client's copy c matches the stored s.
// With answers non-nil, the transitions of pending tool calls the browser
// may make are collected there instead of refused.
func compareMessage(s Message, c clientMessage, isFrontend func(string) bool, answers *Delta) error {
	if s.ID != c.ID || s.Role != c.Role {
		return mismatch("message %q (%s) differs from the stored one", c.ID, c.Role)
	}
	sp, cp := contentParts(s.Parts), contentParts(c.Parts)
	if answers == nil && s.Role == "assistant" && len(cp) <= len(sp) {
		return compareCut(s.ID, sp, cp)
	}
	if len(sp) != len(cp) {
		return mismatch("message %q has %d parts; the stored one has %d", s.ID, len(cp), len(sp))
	}
	for i := range sp {
		if err := comparePart(s.ID, sp[i], cp[i], isFrontend, answers); err != nil {
			return err
		}
	}
	return nil
}

func comparePart(msgID string, s, c Part, isFrontend func(string) bool, answers *Delta) error {
	if s.Type != c.Type {
		return mismatch("message %q: a %q part differs from the stored %q part", msgID, c.Type, s.Type)
	}
	switch {
	case s.Type == "text" || s.Type == "reasoning":
		st, ct := deref(s.Text), deref(c.Text)
		// A stream cut off mid-text leaves the client with a prefix of
		// what the server stored.
		if st != ct && (s.State != "streaming" || !strings.HasPrefix(st, ct)) || s.ID != c.ID {
			return mismatch("message %q: text differs from the stored text", msgID)
		}
		return nil
	case strings.HasPrefix(s.Type, "data-"):
		if s.ID != c.ID || !jsondoc.Equal(s.Data, c.Data) {
			return mismatch("message %q: %s part differs from the stored one", msgID, s.Type)
		}
		return nil
	case s.IsTool():
		return compareTool(msgID, s, c, isFrontend, answers)
	}
	return nil
}

func compareTool(msgID string, s, c Part, isFrontend func(string) bool, answers *Delta) error {
	if s.ToolCallID != c.ToolCallID {
		return mismatch("message %q: tool call %q differs from the stored %q", msgID, c.ToolCallID, s.ToolCallID)
	}
	if !jsondoc.Equal(s.Input, c.Input) {
		return mismatch("tool call %s: its input differs from the input the model gave", s.ToolCallID)
	}
	if s.State == c.State {
		switch s.State {
		case StateOutputAvailable:
			if !jsondoc.Equal(s.Output, c.Output) {
				return mismatch("tool call %s: its output differs from the stored output", s.ToolCallID)
			}
		case StateOutputError:
			if s.ErrorText != c.ErrorText {
				return mismatch("tool call %s: its error differs from the stored error", s.ToolCallID)
			}
		case StateApprovalRequested:
			if c.Approval == nil || s.Approval == nil || c.Approval.ID != s.Approval.ID {
				return mismatch("tool call %s: its confirmation differs from the one issued", s.ToolCallID)
			}
		}
		return nil
	}
	if answers != nil {
		switch {
		case s.State == StateInputAvailable && isFrontend != nil && isFrontend(s.ToolName()) &&
			(c.State == StateOutputAvailable || c.State == StateOutputError):
			if c.State == StateOutputError {
				if err := textRefused("errorText", c.ErrorText); err != nil {
					return err
				}
				answers.Outputs = append(answers.Outputs, FrontendOutput{ToolCallID: s.ToolCallID, ErrorText: c.ErrorText, IsError: true})
			} else {
				out := c.Output
				if len(out) == 0 {
					out = json.RawMessage("null")
				}
				if why := jsondoc.Unstorable(out); why != "" {
					return problem.Invalid("messages.parts.output", "%s", why)
				}
				answers.Outputs = append(answers.Outputs, FrontendOutput{ToolCallID: s.ToolCallID, Output: out})
			}
			return nil
		case s.State == StateApprovalRequested && c.State == StateApprovalResponded &&
			s.Approval != nil && c.Approval != nil && c.Approval.ID == s.Approval.ID && c.Approval.Approved != nil:
			if err := textRefused("approval.reason", c.Approval.Reason); err != nil {
				return err
			}
			answers.Approvals = append(answers.Approvals, ApprovalAnswer{
				ToolCallID: s.ToolCallID, ApprovalID: s.Approval.ID, Approved: *c.Approval.Approved, Reason: c.Approval.Reason,
			})
			return nil
		}
	}
	return mismatch("tool call %s: state %q cannot become %q from the client", s.ToolCallID, s.State, c.State)
}

// compareCut compares the client's copy of a stored answer that the
// client does not answer now. A client that stopped reading early (its
// stop() aborts the fetch, a connection dropped) holds fewer parts, or the
// last ones in an earlier state, while the run went on until its end or a
// stop request reached it; the next message is accepted all the same.
// Each part the client holds must be the stored part as it stood earlier:
// text a prefix, a call with the same id in an earlier state with the
// same input (once the client has it) and confirmation. Nothing the client
// holds is used: the server keeps its own copy, and an edited or invented
// part is refused as ever.
func compareCut(msgID string, sp, cp []Part) error {
	for i := range cp {
		s, c := sp[i], cp[i]
		switch {
		case s.Type != c.Type:
			return mismatch("message %q: a %q part differs from the stored %q part", msgID, c.Type, s.Type)
		case s.Type == "text" || s.Type == "reasoning":
			if !strings.HasPrefix(deref(s.Text), deref(c.Text)) || s.ID != c.ID {
				return mismatch("message %q: text differs from the stored text", msgID)
			}
		case s.IsTool() && stateRank[c.State] < stateRank[s.State]:
			if err := compareEarlierCall(msgID, s, c); err != nil {
				return err
			}
		default:
			if err := comparePart(msgID, s, c, nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// stateRank orders a call's states as a call goes through them.
var stateRank = map[string]int{
	StateInputStreaming: 1, StateInputAvailable: 2, StateApprovalRequested: 3, StateApprovalResponded: 4,
	StateOutputAvailable: 5, StateOutputError: 5, StateOutputDenied: 5,
}

// compareEarlierCall checks a client's call c, in a state the stored call
// s went through.
func compareEarlierCall(msgID string, s, c Part) error {
	if s.ToolCallID != c.ToolCallID || stateRank[c.State] == 0 {
		return mismatch("message %q: tool call %q differs from the stored %q", msgID, c.ToolCallID, s.ToolCallID)
	}
	if c.State != StateInputStreaming && !jsondoc.Equal(s.Input, c.Input) {
		return mismatch("tool call %s: its input differs from the input the model gave", s.ToolCallID)
	}
	if c.Approval != nil && (s.Approval == nil || s.Approval.ID != c.Approval.ID ||
		(c.Approval.Approved != nil && (s.Approval.Approved == nil || *s.Approval.Approved != *c.Approval.Approved))) {
		return mismatch("tool call %s: its confirmation differs from the one issued", s.ToolCallID)
	}
	return nil
}
