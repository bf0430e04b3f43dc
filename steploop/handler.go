package steploop

import (
	"context"
	"encoding/json"
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

// Chat answers POST /v1/chat: it reconciles the client's messages with
// the stored transcript and starts a run, streamed as a UI message stream
// v1. Refusals come before the stream starts, as problems. A bearer
// token is authenticated by the statement that opens the turn
// (DefersBearer); every refusal goes through who.Refusal, so an
// unauthenticated request is 401 whatever else is wrong with it.
func (s *Service) Chat(c echo.Context) error {
	who, err := identity.RequestCaller(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if s.cfg.Model == nil {
		return who.Refusal(ctx, problem.New(http.StatusServiceUnavailable, CodeModelNotConfigured, ModelSettingsHint))
	}
	in, err := parseChat(c)
	if err != nil {
		return who.Refusal(ctx, err)
	}
	// The open runs to its end even if the client goes away meanwhile:
	// pgx returns at once on a cancelled context while a statement or
	// COMMIT already sent may still land, and then nothing would give back
	// the lease it took. With the lease in hand, the run stores what there
	// is and releases it.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), openTimeout)
	o, err := s.open(octx, in, who)
	cancel()
	if err != nil {
		return who.Refusal(ctx, err)
	}
	s.stream(ctx, c.Response(), o.p, o)
	return nil
}

// DefersBearer is the chat's identity.DeferBearer: POST /v1/chat
// authenticates a bearer token in the statement that opens its turn
// instead of a lookup before it, one round trip of the four a chat of one
// tool call makes (ADR-0011 §15).
func DefersBearer(c echo.Context) bool {
	return c.Request().Method == http.MethodPost && c.Path() == "/v1/chat"
}

// openTimeout bounds opening a conversation (a few statements, which may
// wait for another request's short write on the same row) once it no
// longer follows the client's context.
const openTimeout = 10 * time.Second

// chatInput is a decoded POST /v1/chat: the conversation id, and either
// the client's whole message list or its last message only.
type chatInput struct {
	ID      string
	History []clientMessage
	Last    *clientMessage
}

// parseChat decodes and checks the body of POST /v1/chat.
func parseChat(c echo.Context) (chatInput, error) {
	var req ChatRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return chatInput{}, err
	}
	return parseChatRequest(req)
}

// parseChatRequest checks the envelope and decodes the messages.
func parseChatRequest(req ChatRequest) (chatInput, error) {
	in := chatInput{ID: req.ID}
	if req.ID == "" {
		return in, problem.Invalid("id", "is required")
	}
	if !idRE.MatchString(req.ID) {
		return in, problem.Invalid("id", "must be 1–128 letters, digits, '_' or '-'")
	}
	switch req.Trigger {
	case "submit-message", "":
	default:
		// The server's transcript is authoritative: regenerating would
		// rewrite it from the client's side.
		return in, problem.Invalid("trigger", "must be submit-message; regenerating a stored answer is not supported")
	}
	hasLast := len(req.Message) > 0 && string(req.Message) != "null"
	switch {
	case hasLast && req.Messages != nil:
		return in, problem.Invalid("message", "send either messages (the whole list) or message (the last one), not both")
	case hasLast:
		if err := checkPartCount([]json.RawMessage{req.Message}); err != nil {
			return in, err
		}
		var m clientMessage
		if err := json.Unmarshal(req.Message, &m); err != nil {
			return in, problem.Invalid("message", "is not a UIMessage: %v", err)
		}
		in.Last = &m
		return in, nil
	case len(req.Messages) == 0:
		return in, problem.Invalid("messages", "must hold at least the new user message")
	}
	var err error
	in.History, err = decodeMessages(req.Messages)
	return in, err
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
