package web

import (
	"encoding/json"
	"net/http"
	"regexp"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

// conversationIDRE is the step loop's rule for a conversation id (the
// client names its conversations): a page for any other id would only
// lead to a refusal on the first message.
var conversationIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// currencyExponents is money's ISO 4217 table as JSON, for the chat page's
// script, which shows amounts the way the pages do (money.Display) without
// a table of its own.
var currencyExponents = func() string {
	b, err := json.Marshal(money.Exponents())
	if err != nil {
		panic(err)
	}
	return string(b)
}()

type chatView struct {
	// ConversationID is the conversation the page opens; empty starts a
	// new one.
	ConversationID string
	Exponents      string
	Admin          bool
}

// canChat says whether role may talk to the agent: clerks and admins, as
// the /v1 chat routes allow; approvers decide requests in the inbox
// (DESIGN.md §7).
func canChat(role identity.Role) bool {
	return role == identity.RoleClerk || role == identity.RoleAdmin
}

// Chat is the page GET /chat (a new conversation) and GET /chat/{id} (one
// of the user's conversations): a shell for the chat script
// (static/chat.js, built from web/chat/), which talks to /v1 with the
// session cookie and the session's CSRF token.
func (h *Handler) Chat(c echo.Context, s *Session) error {
	if !canChat(s.User.Role) {
		return problem.Forbidden("the chat is for clerks and admins; approvers decide requests in the inbox")
	}
	id := c.Param("id")
	if c.Path() != "/chat" && !conversationIDRE.MatchString(id) {
		return problem.NotFound("conversation")
	}
	d := h.data(c, s, "Chat")
	d.Wide = true
	d.Data = chatView{ConversationID: id, Exponents: currencyExponents, Admin: s.User.Role == identity.RoleAdmin}
	return h.render(c, http.StatusOK, "chat", d)
}
