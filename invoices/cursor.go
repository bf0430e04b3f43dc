package invoices

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
)

// Cursor is a keyset position in (created_at, id) order. Clients get it as
// an opaque string: base64url of a small JSON object, so its shape can
// change without breaking them.
type Cursor struct {
	CreatedAt time.Time `json:"t"`
	ID        uuid.UUID `json:"id"`
}

// Encode returns the opaque form.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(c) // a struct of time and uuid always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a non-empty opaque cursor; anything this service
// did not produce is a 422 naming the cursor field.
func ParseCursor(s string) (*Cursor, error) {
	bad := problem.Invalid("cursor", "is not a cursor this service returned; pass next_cursor from the previous page unchanged")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c Cursor
	if err := json.Unmarshal(b, &c); err != nil || c.ID == uuid.Nil || c.CreatedAt.IsZero() {
		return nil, bad
	}
	return &c, nil
}

// List is one page of a list: Data, and NextCursor when HasMore.
type List[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// page builds a List from limit+1 fetched rows.
func page[T any](rows []T, limit int, key func(T) Cursor) List[T] {
	out := List[T]{Data: rows}
	if len(rows) > limit {
		out.Data = rows[:limit]
		out.HasMore = true
		next := key(rows[limit-1]).Encode()
		out.NextCursor = &next
	}
	if out.Data == nil {
		out.Data = []T{}
	}
	return out
}
