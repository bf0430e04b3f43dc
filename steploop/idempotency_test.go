package steploop_test

import (
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// DESIGN §5 takes Idempotency-Key on every POST; on /v1/chat the stream
// must still flow (the key's recorder passes flushes on) and the key must
// not stay claimed once the stream has ended (a stream is never stored).
func TestChatWithAnIdempotencyKeyStreams(t *testing.T) {
	t.Parallel()
	sc, err := model.NewScripted(model.Script{Default: []model.ScriptStep{{Text: "Hello there."}}})
	require.NoError(t, err)
	h := apptest.New(t, apptest.Options{Config: app.Config{Model: sc}})
	_, clerk := h.User(t, "clerk", identity.RoleClerk)

	r := h.Do(t, http.MethodPost, "/v1/chat", clerk, body("conv-idem", userMsg("u1", "hello")), "Idempotency-Key", "chat-key-1")
	require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
	chunks, done := parseSSE(t, r.Body)
	require.True(t, done, "the stream ends with [DONE]; got chunks %v", chunkTypes(chunks))
	require.Contains(t, string(r.Body), `"delta":"there."`)

	r = h.Do(t, http.MethodPost, "/v1/chat", clerk, body("conv-idem", userMsg("u1", "hello")), "Idempotency-Key", "chat-key-1")
	require.NotEqual(t, "IDEMPOTENCY_KEY_IN_USE", problemCode(t, r.Body), "%d %s", r.StatusCode, r.Body)
	require.Empty(t, r.Header.Get("Idempotent-Replayed"), "a stream is never replayed")
}
