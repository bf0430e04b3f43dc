package steploop_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Odd bodies on a new conversation: each is a 4xx problem+json and none
// creates the conversation.
func TestChatOddBodiesAreProblemsAndWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := map[string]string{
		"null messages":        `{"id":"odd1","messages":null}`,
		"messages object":      `{"id":"odd1","messages":{}}`,
		"null message":         `{"id":"odd1","messages":[null]}`,
		"empty message":        `{"id":"odd1","messages":[{}]}`,
		"parts null":           `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":null}]}`,
		"text null":            `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":null}]}]}`,
		"file part":            `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"file","url":"data:,x","mediaType":"text/plain"}]}]}`,
		"assistant first":      `{"id":"odd1","messages":[{"id":"u1","role":"assistant","parts":[{"type":"text","text":"hi"}]}]}`,
		"system first":         `{"id":"odd1","messages":[{"id":"u1","role":"system","parts":[{"type":"text","text":"hi"}]}]}`,
		"two user messages":    `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]},{"id":"u2","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"same id twice":        `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]},{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"bad message id":       `{"id":"odd1","messages":[{"id":"u 1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"empty message id":     `{"id":"odd1","messages":[{"id":"","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"regenerate":           `{"id":"odd1","trigger":"regenerate-message","messageId":"u1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"messageId number":     `{"id":"odd1","messageId":5,"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"approval id number":   `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi","approval":{"id":1}}]}]}`,
		"dup key nested":       `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi","text":"bye"}]}]}`,
		"id too long":          `{"id":"` + strings.Repeat("a", 129) + `","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"text too long":        `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"` + strings.Repeat("a", 70000) + `"}]}]}`,
		"empty text":           `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":""}]}]}`,
		"trailing garbage":     `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]} x`,
		"not json":             `hello`,
		"array body":           `[]`,
		"empty body":           ``,
		"deep nesting in part": `{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi","input":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}]}]}`,
	}
	for name, raw := range cases {
		res := b.chatRaw(context.Background(), t, b.Token, "application/json", []byte(raw))
		status, h, out := res.Status, res.Header, res.Body
		if status >= 500 || status < 400 {
			t.Errorf("%s: status %d: %s", name, status, out)
			continue
		}
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Errorf("%s: %d with Content-Type %q: %s", name, status, ct, out)
		}
		st, _ := b.conversation(t, b.Token, "odd1")
		if st != http.StatusNotFound {
			t.Errorf("%s: the refused request created the conversation (GET %d)", name, st)
		}
	}
	// Another content type is refused (415), never a 5xx.
	res := b.chatRaw(context.Background(), t, b.Token, "text/plain", []byte(`{"id":"odd1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`))
	status, out := res.Status, res.Body
	require.Less(t, status, 500, string(out))
	require.Equal(t, http.StatusUnsupportedMediaType, status, string(out))
}
