package steploop

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// titleLength bounds a conversation's title in a list: a line of a
// sidebar, cut from its first user message (characters, not bytes).
const titleLength = 80

// ConversationSummary is one row of GET /v1/conversations.
type ConversationSummary struct {
	ID string `json:"id"`
	// Title is the start of the conversation's first user message.
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Cursor implements page.Row: conversations page by (created_at, id),
// their id being the client's text.
func (c ConversationSummary) Cursor() page.Cursor {
	return page.Cursor{CreatedAt: c.CreatedAt, Key: c.ID}
}

// ConversationList answers GET /v1/conversations: the principal's
// conversations, newest first, in keyset pages (limit, cursor).
func (s *Service) ConversationList(c echo.Context) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	req := page.Request{}
	if req.Limit, err = page.ParseLimit(c.QueryParam("limit")); err != nil {
		return err
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		if req.After, err = page.ParseKeyCursor(cur); err != nil {
			return err
		}
	}
	rows, err := conversationList(c.Request().Context(), s.cfg.DB, p.UserID, req.Ahead())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page.Of(rows, req.Limit))
}

// conversationList reads one page of owner's conversations, newest first,
// each titled by its first message (position 0, a user message).
func conversationList(ctx context.Context, db store.Executor, owner uuid.UUID, p page.Request) ([]ConversationSummary, error) {
	var at *time.Time
	var key *string
	if p.After != nil {
		at, key = &p.After.CreatedAt, &p.After.Key
	}
	rows, err := db.Query(ctx, `
		SELECT c.id,
		       coalesce(left((SELECT string_agg(t->>'text', '') FROM conversation_messages m, jsonb_array_elements(m.parts) t
		                       WHERE m.conversation_id = c.id AND m.position = 0 AND t->>'type' = 'text'), $4), ''),
		       c.created_at, c.updated_at
		  FROM conversations c
		 WHERE c.owner_id = $1 AND ($2::timestamptz IS NULL OR (c.created_at, c.id) < ($2, $3))
		 ORDER BY c.created_at DESC, c.id DESC
		 LIMIT $5`, owner, at, key, titleLength, p.Limit)
	if err != nil {
		return nil, store.MapError(err, "conversations")
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ConversationSummary])
	return out, store.MapError(err, "conversations")
}
