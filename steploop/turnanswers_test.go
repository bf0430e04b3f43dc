package steploop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// badOutput is a handler result whose encoding panics (a bug in a
// MarshalJSON): the panic happens in the loop, outside invoke's guard.
type badOutput struct{}

func (badOutput) MarshalJSON() ([]byte, error) { panic("MarshalJSON bug") }

// remindAAndB is a model that pauses two send-reminder calls in its first
// step, then answers "ok".
func remindAAndB() funcModel {
	var steps atomic.Int32
	return funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		if steps.Add(1) == 1 {
			return model.Step{ToolCalls: []model.ToolCall{
				{ID: "c1", Name: "send-reminder", Arguments: `{"to":"a"}`},
				{ID: "c2", Name: "send-reminder", Arguments: `{"to":"b"}`},
			}}, nil
		}
		return model.Step{Text: "ok"}, nil
	})
}

// approveAll is the last stored message with every paused send-reminder
// call approved, as the browser sends it, and the confirmation ids by
// tool call id.
func approveAll(t *testing.T, msgs []json.RawMessage) (map[string]any, map[string]string) {
	t.Helper()
	var last map[string]any
	require.NoError(t, json.Unmarshal(msgs[len(msgs)-1], &last))
	ids := map[string]string{}
	for _, p := range last["parts"].([]any) {
		pm := p.(map[string]any)
		if pm["type"] == "tool-send-reminder" {
			require.Equal(t, "approval-requested", pm["state"])
			a := pm["approval"].(map[string]any)
			ids[pm["toolCallId"].(string)] = a["id"].(string)
			pm["state"], pm["approval"] = "approval-responded", map[string]any{"id": a["id"], "approved": true}
		}
	}
	return last, ids
}

// Two bound calls paused in one step; the browser answers both in one
// request; the first answer's handling panics. Both calls end in the
// stream and the transcript alike (the first's effect unknown, the second
// not run, its confirmation unused), so the client's copy equals the
// stored one and its next message is accepted.
func TestChatPanicWhileAnsweringSeveralConfirmationsKeepsCopiesEqual(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatPanicWhileAnsweringSeveralConfirmationsKeepsCopiesEqual(t, mode)
		})
	}
}

func testChatPanicWhileAnsweringSeveralConfirmationsKeepsCopiesEqual(t *testing.T, mode string) {
	var ran atomic.Int32
	reg := registryWith("send-reminder", capability.RiskBound, func(_ context.Context, call capability.Call) (any, error) {
		ran.Add(1)
		var in struct{ To string }
		_ = json.Unmarshal(call.Input, &in)
		if in.To == "a" {
			return badOutput{}, nil
		}
		return map[string]any{"sent_to": in.To}, nil
	})
	ctl, err := confirm.NewController(confirm.Config{Registry: confirm.NewMemory(), Mode: confirm.ModeWait})
	require.NoError(t, err)
	b := setupWithConfig(t, steploop.Config{Tools: reg, Confirm: ctl, Model: remindAAndB()})
	b.Mode = mode
	res := b.chat(t, b.Token, body("conv-2appr", userMsg("u1", "remind a and b")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, msgs := b.conversation(t, b.Token, "conv-2appr")

	// The browser answers both confirmations (ai@7 sends once all are answered).
	last, _ := approveAll(t, msgs)
	res = b.chat(t, b.Token, body("conv-2appr", anyList(msgs[:len(msgs)-1], last)...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"], "the panic ends the turn")

	// The client applies the stream to its copy, as ai@7 does.
	for _, c := range res.Chunks {
		if c["type"] != "tool-output-error" {
			continue
		}
		for _, p := range last["parts"].([]any) {
			pm := p.(map[string]any)
			if pm["toolCallId"] == c["toolCallId"] {
				pm["state"], pm["errorText"] = "output-error", c["errorText"]
			}
		}
	}
	_, stored := b.conversation(t, b.Token, "conv-2appr")
	var sl map[string]any
	require.NoError(t, json.Unmarshal(stored[len(stored)-1], &sl))
	states := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for _, p := range m["parts"].([]any) {
			pm := p.(map[string]any)
			if id, ok := pm["toolCallId"]; ok {
				out[id.(string)] = pm["state"]
			}
		}
		return out
	}
	require.Equal(t, states(sl), states(last), "stored transcript and the client's copy are equal after the panic")
	require.Equal(t, int32(1), ran.Load(), "the second answer's call did not run")

	// The user's next message, from the client's copy.
	res = b.chat(t, b.Token, body("conv-2appr", anyList(msgs[:len(msgs)-1], last, userMsg("u2", "what happened?"))...))
	require.Equal(t, http.StatusOK, res.Status, "next message refused: %s", res.Body)
}

// Two bound calls answered in one request; the first one's effect revokes
// the token. The second is not run, and its confirmation is not spent on a
// credential that no longer holds: the re-check comes before the
// controller consumes the evidence.
func TestChatConfirmationIsNotSpentWhenTheCredentialNoLongerHolds(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatConfirmationIsNotSpentWhenTheCredentialNoLongerHolds(t, mode)
		})
	}
}

func testChatConfirmationIsNotSpentWhenTheCredentialNoLongerHolds(t *testing.T, mode string) {
	var ran atomic.Int32
	var b *bundle
	reg := registryWith("send-reminder", capability.RiskBound, func(_ context.Context, call capability.Call) (any, error) {
		ran.Add(1)
		if err := identity.TokenRevoke(context.Background(), b.Pool, b.Token); err != nil {
			return nil, err
		}
		return map[string]any{"sent": true}, nil
	})
	reg2 := confirm.NewMemory()
	ctl, err := confirm.NewController(confirm.Config{Registry: reg2, Mode: confirm.ModeWait})
	require.NoError(t, err)
	b = setupWithConfig(t, steploop.Config{Tools: reg, Confirm: ctl, CredentialMaxAge: time.Nanosecond, Model: remindAAndB()})
	b.Mode = mode
	res := b.chat(t, b.Token, body("conv-recheck", userMsg("u1", "remind a and b")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, msgs := b.conversation(t, b.Token, "conv-recheck")
	last, ids := approveAll(t, msgs)
	res = b.chat(t, b.Token, body("conv-recheck", anyList(msgs[:len(msgs)-1], last)...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"])
	require.Contains(t, res.Chunks[len(res.Chunks)-1]["errorText"], "no longer valid")
	require.EqualValues(t, 1, ran.Load(), "the second call did not run")
	first, err := reg2.Get(context.Background(), ids["c1"])
	require.NoError(t, err)
	require.NotNil(t, first.UsedAt, "the first confirmation was used")
	second, err := reg2.Get(context.Background(), ids["c2"])
	require.NoError(t, err)
	require.Nil(t, second.UsedAt, "the second confirmation was not spent")
}
