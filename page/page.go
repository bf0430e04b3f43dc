// Package page is the one shape of a list in the API: a page envelope
// ({data, has_more, next_cursor}), the opaque keyset cursor every list
// hands out, and the page size a client may ask for.
package page

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
)

// Page sizes: 20 rows unless asked, at most 100, so one page of invoices
// with their lines stays a bounded read.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Cursor is a keyset position in (created_at, id) order. Clients get it as
// an opaque string: base64url of a small JSON object, so its shape can
// change without breaking them. A row's id is a UUID (ID), or the text a
// client chose (Key: a chat's conversation id); exactly one is set.
type Cursor struct {
	CreatedAt time.Time `json:"t"`
	ID        uuid.UUID `json:"id,omitzero"`
	Key       string    `json:"k,omitempty"`
}

// Encode returns the opaque form.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(c) // a struct of time and uuid always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a non-empty opaque cursor of a list of rows with
// UUIDs; anything this service did not produce for such a list is a 422
// naming the cursor field.
func ParseCursor(s string) (*Cursor, error) {
	c, err := parseCursor(s)
	if err != nil || c.ID == uuid.Nil || c.Key != "" {
		return nil, badCursor
	}
	return c, nil
}

// ParseKeyCursor is ParseCursor for a list of rows with text ids (Key).
func ParseKeyCursor(s string) (*Cursor, error) {
	c, err := parseCursor(s)
	if err != nil || c.Key == "" || c.ID != uuid.Nil {
		return nil, badCursor
	}
	return c, nil
}

var badCursor = problem.Invalid("cursor", "is not a cursor this service returned; pass next_cursor from the previous page unchanged")

func parseCursor(s string) (*Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, badCursor
	}
	var c Cursor
	if err := json.Unmarshal(b, &c); err != nil || c.CreatedAt.IsZero() {
		return nil, badCursor
	}
	return &c, nil
}

// ParseLimit reads a page size given as text (a query parameter): ""
// is DefaultLimit, anything but 1 to MaxLimit is a 422 naming limit.
func ParseLimit(s string) (int, error) {
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, problem.Invalid("limit", "must be an integer from 1 to %d", MaxLimit)
	}
	return n, nil
}

// Request asks for one page: Limit rows after After (nil: from the
// start).
type Request struct {
	Limit int
	After *Cursor
}

// Ahead is r asking for one row more than the page holds: the extra row
// tells Of whether a next page exists, without a count.
func (r Request) Ahead() Request {
	r.Limit++
	return r
}

// Row is a listed row: it knows its position.
type Row interface {
	Cursor() Cursor
}

// List is one page of a list: Data, and NextCursor when HasMore.
type List[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// Of builds the page of limit rows from rows read with Request.Ahead: an
// empty page is [], never null, and the cursor names the last row shown.
func Of[T Row](rows []T, limit int) List[T] {
	out := List[T]{Data: rows}
	if len(rows) > limit {
		out.Data = rows[:limit]
		out.HasMore = true
		next := rows[limit-1].Cursor().Encode()
		out.NextCursor = &next
	}
	if out.Data == nil {
		out.Data = []T{}
	}
	return out
}
