package page_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

type row struct {
	at time.Time
	id uuid.UUID
}

func (r row) Cursor() page.Cursor { return page.Cursor{CreatedAt: r.at, ID: r.id} }

func rows(n int) []row {
	out := make([]row, n)
	for i := range out {
		out[i] = row{at: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), id: uuid.Must(uuid.NewV7())}
	}
	return out
}

func requireCursorRefused(t *testing.T, err error, what string) {
	t.Helper()
	p, ok := problem.As(err)
	require.True(t, ok, "%s: %v", what, err)
	require.Equal(t, problem.CodeValidation, p.Code, what)
	require.Equal(t, "cursor", p.Errors[0].Field, what)
}

func TestCursorRoundTripsAndRefusesWhatItDidNotWrite(t *testing.T) {
	t.Parallel()
	c := page.Cursor{CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC), ID: uuid.Must(uuid.NewV7())}
	got, err := page.ParseCursor(c.Encode())
	require.NoError(t, err)
	require.True(t, c.CreatedAt.Equal(got.CreatedAt))
	require.Equal(t, c.ID, got.ID)

	for what, s := range map[string]string{
		"not base64":  "!!!",
		"not JSON":    base64.RawURLEncoding.EncodeToString([]byte("nope")),
		"no id":       base64.RawURLEncoding.EncodeToString([]byte(`{"t":"2026-01-01T00:00:00Z"}`)),
		"no time":     base64.RawURLEncoding.EncodeToString([]byte(`{"id":"` + uuid.NewString() + `"}`)),
		"padded":      base64.URLEncoding.EncodeToString([]byte(`{"x":1}`)),
		"another key": "eyJ4IjoxfQ",
	} {
		_, err := page.ParseCursor(s)
		requireCursorRefused(t, err, what)
	}
}

func TestParseLimit(t *testing.T) {
	t.Parallel()
	n, err := page.ParseLimit("")
	require.NoError(t, err)
	require.Equal(t, page.DefaultLimit, n)
	n, err = page.ParseLimit("100")
	require.NoError(t, err)
	require.Equal(t, 100, n)
	for _, bad := range []string{"0", "101", "-1", "ten", "1.5"} {
		_, err := page.ParseLimit(bad)
		p, ok := problem.As(err)
		require.True(t, ok, bad)
		require.Equal(t, "limit", p.Errors[0].Field, bad)
	}
}

// Of turns the limit+1 rows a Request.Ahead read into a page: the extra
// row only says that more follow, and the cursor names the last row shown.
func TestOfBuildsThePageFromOneRowAhead(t *testing.T) {
	t.Parallel()
	r := page.Request{Limit: 3}
	require.Equal(t, 4, r.Ahead().Limit)

	all := rows(4)
	l := page.Of(all, 3)
	require.Equal(t, all[:3], l.Data)
	require.True(t, l.HasMore)
	next, err := page.ParseCursor(*l.NextCursor)
	require.NoError(t, err)
	require.Equal(t, all[2].id, next.ID)

	l = page.Of(all[:3], 3)
	require.False(t, l.HasMore)
	require.Nil(t, l.NextCursor)

	b, err := json.Marshal(page.Of([]row(nil), 3))
	require.NoError(t, err)
	require.JSONEq(t, `{"data":[],"has_more":false,"next_cursor":null}`, string(b), "an empty page is [], never null")
}

// FuzzParseCursor: any text is refused with a 422 naming cursor, or is a
// cursor that round-trips.
func FuzzParseCursor(f *testing.F) {
	c := page.Cursor{CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), ID: uuid.Must(uuid.NewV7())}
	for _, s := range []string{"", "AZO3XmbTdwGl1JjKK2u7Wg", c.Encode(), "e30", "bnVsbA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := page.ParseCursor(s)
		if err != nil {
			requireCursorRefused(t, err, s)
			return
		}
		again, err := page.ParseCursor(got.Encode())
		require.NoError(t, err)
		require.True(t, again.CreatedAt.Equal(got.CreatedAt) && again.ID == got.ID, "%q", s)
	})
}

// A list of rows with text ids (a chat's conversations) pages by a cursor
// of its own kind; neither kind is taken for the other.
func TestKeyCursorsAreTheirOwnKind(t *testing.T) {
	t.Parallel()
	k := page.Cursor{CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC), Key: "chat-1"}
	got, err := page.ParseKeyCursor(k.Encode())
	require.NoError(t, err)
	require.Equal(t, "chat-1", got.Key)
	require.True(t, k.CreatedAt.Equal(got.CreatedAt))
	_, err = page.ParseCursor(k.Encode())
	requireCursorRefused(t, err, "a key cursor for a UUID list")
	u := page.Cursor{CreatedAt: k.CreatedAt, ID: uuid.Must(uuid.NewV7())}
	_, err = page.ParseKeyCursor(u.Encode())
	requireCursorRefused(t, err, "a UUID cursor for a key list")
	_, err = page.ParseKeyCursor(base64.RawURLEncoding.EncodeToString([]byte(`{"t":"2026-01-01T00:00:00Z"}`)))
	requireCursorRefused(t, err, "neither")
}
