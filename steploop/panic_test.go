package steploop_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tool handler that panics ends its call as a tool error with a safe
// message, like any other failure: left unanswered in the transcript, a
// server tool's call would block the conversation for good.
func TestChatToolPanicIsAToolErrorAndTheConversationGoesOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.Token

	res := b.chat(t, tok, body("conv-boom", userMsg("u1", "boom please")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.True(t, res.Done)
	require.Contains(t, chunkTypes(res.Chunks), "tool-output-error")
	require.NotContains(t, string(res.Body), "nil map", "no panic text reaches the client")
	require.Contains(t, string(res.Body), `"delta":"Done."`, "the model read the error and answered")
	status, msgs := b.conversation(t, tok, "conv-boom")
	require.Equal(t, http.StatusOK, status)

	res = b.chat(t, tok, body("conv-boom", anyList(msgs, userMsg("u2", "hello again"))...))
	require.Equal(t, http.StatusOK, res.Status, "the conversation goes on after a tool panic: %s\nstored: %s", res.Body, msgs[len(msgs)-1])
}
