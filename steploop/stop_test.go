package steploop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/steploop"
	"github.com/stretchr/testify/require"
)

// A client that goes away leaves its run going (ADR-0017): the answer is
// written to its end and stored, as a reload will show it.
func TestChatDisconnectLeavesTheRunGoing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.leaveMidText(t, "conv-left-going", "tell a slow story")
	var msgs []json.RawMessage
	require.Eventually(t, func() bool {
		_, msgs = b.conversation(t, b.Token, "conv-left-going")
		return len(msgs) == 2 && strings.Contains(string(msgs[1]), `"finishReason":"stop"`)
	}, 10*time.Second, 20*time.Millisecond, "the answer was written to its end")
	require.Contains(t, string(msgs[1]), `"text":"`+strings.TrimSpace(slowText)+` "`)
	require.Contains(t, string(msgs[1]), `"state":"done"`)
	select {
	case <-b.Model.cancelled:
		t.Fatal("the model call was cancelled when the client left")
	default:
	}
}

// leaveMidText posts text to a new conversation id, reads until text
// streams, and goes away.
func (b *bundle) leaveMidText(t *testing.T, id, text string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf, _ := json.Marshal(body(id, userMsg("u1", text)))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.URL+"/v1/chat", strings.NewReader(string(buf)))
	req.Header.Set("Authorization", "Bearer "+b.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	// Read until text streams, then go away.
	chunk := make([]byte, 512)
	got := ""
	for !strings.Contains(got, "text-delta") {
		n, err := resp.Body.Read(chunk)
		require.NoError(t, err)
		got += string(chunk[:n])
	}
	cancel()
	resp.Body.Close()
}

// stop posts POST /v1/chat/{id}/stop as token and returns its status.
func (b *bundle) stop(t *testing.T, token, id string) (int, []byte) {
	t.Helper()
	res := b.call(t, http.MethodPost, "/v1/chat/"+id+"/stop", token)
	return res.Status, res.Body
}

// The stop route ends a run whose client went away: the model call is
// cancelled, what completed is kept (marked interrupted), and the
// conversation is usable again.
func TestChatStopRouteCancelsTheModelCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.leaveMidText(t, "conv-gone", "tell a slow story")
	status, raw := b.stop(t, b.Token, "conv-gone")
	require.Equal(t, http.StatusOK, status, string(raw))
	require.JSONEq(t, `{"message_id":`+mustString(t, raw, "message_id")+`,"finish_reason":"interrupted"}`, string(raw))
	select {
	case <-b.Model.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the model server never saw its request cancelled")
	}

	// What completed is kept, and the conversation is usable again once
	// the first request has released it.
	var msgs []json.RawMessage
	require.Eventually(t, func() bool {
		res := b.chat(t, b.Token, body("conv-gone", userMsg("probe", "x")))
		if res.Status != http.StatusConflict || problemCode(t, res.Body) != steploop.CodeTranscriptMismatch {
			return false
		}
		_, msgs = b.conversation(t, b.Token, "conv-gone")
		return len(msgs) == 2
	}, 10*time.Second, 20*time.Millisecond)
	require.Contains(t, string(msgs[1]), `"text":"slow `)
	require.Contains(t, string(msgs[1]), `"finishReason":"interrupted"`)
	status, _ = b.stop(t, b.Token, "conv-gone")
	require.Equal(t, http.StatusNoContent, status, "nothing runs any more")
	res := b.chat(t, b.Token, body("conv-gone", anyList(msgs, userMsg("u2", "look up alpha"))...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Contains(t, string(res.Body), `"delta":"alpha."`)
}
