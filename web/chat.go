package web

import (
	"encoding/json"
	"net/http"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/steploop"
	"github.com/labstack/echo/v4"
)

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
	// Elsewhere is set for a role without the chat: the page says where
	// that user's work is instead.
	Elsewhere bool
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
// session cookie and the session's CSRF token. Another user's
// conversation is a 404, as GET /v1/conversations/{id} answers, and so is
// one that does not exist: the page would only open it empty. An approver
// following a link here reads where their work is: the inbox.
func (h *Handler) Chat(c echo.Context, s *Session) error {
	if !canChat(s.User.Role) {
		d := h.data(c, s, "Chat")
		d.Data = chatView{Elsewhere: true}
		return h.render(c, http.StatusOK, "chat", d)
	}
	id := c.Param("id")
	if c.Path() != "/chat" {
		if _, err := steploop.ConversationGet(c.Request().Context(), h.db, id, s.User.ID); err != nil {
			return err
		}
	}
	d := h.data(c, s, "Chat")
	d.Wide = true
	d.Data = chatView{ConversationID: id, Exponents: currencyExponents, Admin: s.User.Role == identity.RoleAdmin}
	return h.render(c, http.StatusOK, "chat", d)
}
