package web

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/steploop"
	"github.com/labstack/echo/v4"
)

type conversationView struct {
	Request      requestRow
	Conversation string
	Messages     []transcriptMessage
}

type transcriptMessage struct {
	ID, Role string
	Parts    []transcriptPart
}

// transcriptPart is one part as the page shows it: Kind is text,
// reasoning, tool or approval.
type transcriptPart struct {
	Kind, Text               string
	Tool, State, ErrorText   string
	Input, Output            string
	Confirmation, ApprovalID string
}

// transcriptOf turns stored messages into what the page shows; parts it
// has nothing to say about (step boundaries, other data) are left out.
func transcriptOf(msgs []steploop.Message) []transcriptMessage {
	out := make([]transcriptMessage, len(msgs))
	for i, m := range msgs {
		out[i] = transcriptMessage{ID: m.ID, Role: m.Role}
		for _, p := range m.Parts {
			tp := transcriptPart{Kind: p.Type}
			switch {
			case p.Type == "text" || p.Type == "reasoning":
				if p.Text != nil {
					tp.Text = *p.Text
				}
			case p.IsTool():
				tp = transcriptPart{Kind: "tool", Tool: p.ToolName(), State: p.State, ErrorText: p.ErrorText,
					Input: pretty(p.Input), Output: pretty(p.Output), Confirmation: confirmation(p.Approval)}
			case p.Type == "data-approval":
				tp = transcriptPart{Kind: "approval", ApprovalID: p.ID}
			default:
				continue
			}
			out[i].Parts = append(out[i].Parts, tp)
		}
	}
	return out
}

// confirmation says how the user answered a bound tool's confirmation.
func confirmation(a *steploop.PartApproval) string {
	switch {
	case a == nil:
		return ""
	case a.Approved == nil:
		return "asked the user to confirm"
	case *a.Approved:
		return "the user approved"
	case a.Reason != "":
		return "the user denied (“" + a.Reason + "”)"
	}
	return "the user denied"
}

// RequestConversation is the page GET /approvals/{id}/conversation: the
// chat in which an agent asked for the request, read only, for an admin
// deciding it (what the requester asked the agent is part of the
// decision). Conversations are their owners' (DESIGN.md §7); admins read
// them here, and only through a request an agent raised in one.
func (h *Handler) RequestConversation(c echo.Context, s *Session) error {
	if s.User.Role != identity.RoleAdmin {
		return problem.Forbidden("only admins read the conversation behind a request")
	}
	id, err := server.PathID(c, "approval")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	a, err := h.deps.Approvals.Get(ctx, id)
	if err != nil {
		return err
	}
	conv, ok := a.RequestedVia.Conversation()
	if !ok {
		return problem.NotFound("conversation")
	}
	msgs, err := steploop.MessageList(ctx, h.db, conv)
	if err != nil {
		return err
	}
	names, err := h.peopleOf(ctx, a)
	if err != nil {
		return err
	}
	v := conversationView{Request: rowOf(a, names), Conversation: conv, Messages: transcriptOf(msgs)}
	d := h.data(c, s, "Conversation behind: "+v.Request.Title())
	d.Data = v
	return h.render(c, http.StatusOK, "conversation", d)
}

// pretty indents a JSON value for reading; what is not JSON is shown as
// it is.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
