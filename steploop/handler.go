package steploop

import (
	"context"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// ModelSettingsHint names the settings that configure a model.
const ModelSettingsHint = "no model is configured: set INVOICED_MODEL_PROVIDER=openai with INVOICED_MODEL_BASE_URL, " +
	"INVOICED_MODEL_API_KEY and INVOICED_MODEL_NAME (any OpenAI-compatible Chat Completions endpoint), " +
	"or INVOICED_MODEL_PROVIDER=scripted with INVOICED_MODEL_SCRIPT, and restart"

// Chat answers POST /v1/chat: it reconciles the client's message list with
// the stored transcript, then streams the loop's steps as a UI message
// stream v1. Refusals come before the stream starts, as problems.
func (s *Service) Chat(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	if s.cfg.Model == nil {
		return problem.New(http.StatusServiceUnavailable, CodeModelNotConfigured, ModelSettingsHint)
	}
	id, client, err := parseChat(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// The open runs to its end even if the client goes away meanwhile:
	// pgx returns at once on a cancelled context while a statement or
	// COMMIT already sent may still land, and then nothing would give back
	// the lease it took (busy for the whole LeaseTTL). With the lease in
	// hand, the stream below stores what there is and releases it.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), openTimeout)
	o, err := s.open(octx, id, p, client)
	cancel()
	if err != nil {
		return err
	}
	s.stream(ctx, c.Response(), p, o)
	return nil
}

// openTimeout bounds opening a conversation (at most three statements,
// which may wait for another request's short write on the same row) once
// it no longer follows the client's context.
const openTimeout = 10 * time.Second

// parseChat decodes and checks the body of POST /v1/chat: the
// conversation id and the client's messages.
func parseChat(c echo.Context) (string, []clientMessage, error) {
	var req ChatRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return "", nil, err
	}
	client, err := parseChatRequest(req)
	if err != nil {
		return "", nil, err
	}
	return req.ID, client, nil
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

// ConversationView is GET /v1/conversations/{id}: the stored transcript in
// UIMessage shape, ready to seed a client (useChat's messages).
type ConversationView struct {
	Conversation
	Messages []Message `json:"messages"`
}

// ConversationGet answers GET /v1/conversations/{id}; another principal's
// conversation is 404.
func (s *Service) ConversationGet(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
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
