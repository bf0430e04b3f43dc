package steploop

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// ModelSettingsHint names the settings that configure a model.
const ModelSettingsHint = "no model is configured: set INVOICED_MODEL_PROVIDER=openai with INVOICED_MODEL_BASE_URL, " +
	"INVOICED_MODEL_API_KEY and INVOICED_MODEL_NAME (any OpenAI-compatible Chat Completions endpoint), " +
	"or INVOICED_MODEL_PROVIDER=scripted with INVOICED_MODEL_SCRIPT, and restart"

// Mount adds POST /chat and GET /conversations/:id to an authenticated
// /v1 group.
func (s *Service) Mount(g *echo.Group) {
	g.POST("/chat", s.Chat)
	g.GET("/conversations/:id", s.ConversationGet)
}

// Chat answers POST /v1/chat: it reconciles the client's message list with
// the stored transcript, then streams the loop's steps as a UI message
// stream v1. Refusals come before the stream starts, as problems.
func (s *Service) Chat(c echo.Context) error {
	p, err := identity.MustPrincipal(c)
	if err != nil {
		return err
	}
	if s.cfg.Model == nil {
		return problem.New(http.StatusServiceUnavailable, CodeModelNotConfigured, ModelSettingsHint)
	}
	var req ChatRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	client, err := parseChatRequest(req)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	lease, err := ConversationAcquire(ctx, s.cfg.DB, req.ID, p.UserID, s.cfg.LeaseTTL)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := ConversationRelease(rctx, s.cfg.DB, lease); err != nil {
			s.cfg.Log.Error("steploop: release conversation", "conversation", lease.ID, "err", err)
		}
	}()
	stored, err := MessageList(ctx, s.cfg.DB, lease.ID)
	if err != nil {
		return err
	}
	delta, err := Reconcile(stored, client, s.isFrontend)
	if err != nil {
		return err
	}
	if delta.NewUser != nil {
		if err := MessagePut(ctx, s.cfg.DB, lease.ID, len(stored), *delta.NewUser); err != nil {
			return err
		}
		stored = append(stored, *delta.NewUser, Message{ID: newMessageID(), Role: "assistant", Parts: []Part{}})
	}
	runCtx, cancel := context.WithTimeout(ctx, s.cfg.LeaseTTL-30*time.Second)
	defer cancel()
	t := &turn{s: s, ctx: runCtx, lease: lease, p: p, msgs: stored, ai: len(stored) - 1, out: newSSE(c.Response())}
	t.run(delta)
	return nil
}

// parseChatRequest checks the envelope and decodes the messages.
func parseChatRequest(req ChatRequest) ([]clientMessage, error) {
	if req.ID == "" {
		return nil, problem.Invalid("id", "is required")
	}
	if !idRE.MatchString(req.ID) {
		return nil, problem.Invalid("id", "must be 1–128 letters, digits, '_' or '-'")
	}
	switch req.Trigger {
	case "submit-message", "":
	default:
		// The server's transcript is authoritative: regenerating would
		// rewrite it from the client's side.
		return nil, problem.Invalid("trigger", "must be submit-message; regenerating a stored answer is not supported")
	}
	if len(req.Messages) == 0 {
		return nil, problem.Invalid("messages", "must hold at least the new user message")
	}
	return decodeMessages(req.Messages)
}

func newMessageID() string { return "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "") }

// ConversationView is GET /v1/conversations/{id}: the stored transcript in
// UIMessage shape, ready to seed a client (useChat's messages).
type ConversationView struct {
	Conversation
	Messages []Message `json:"messages"`
}

// ConversationGet answers GET /v1/conversations/{id}; another principal's
// conversation is 404.
func (s *Service) ConversationGet(c echo.Context) error {
	p, err := identity.MustPrincipal(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	conv, err := ConversationGet(ctx, s.cfg.DB, c.Param("id"), p.UserID)
	if err != nil {
		return err
	}
	msgs, err := MessageList(ctx, s.cfg.DB, conv.ID)
	if err != nil {
		return err
	}
	view := ConversationView{Conversation: *conv, Messages: make([]Message, len(msgs))}
	for i, m := range msgs {
		view.Messages[i] = m.UI()
	}
	return c.JSON(http.StatusOK, view)
}
