package steploop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// editToolPart rewrites the first tool part named tool in the last stored
// message, as a browser answering it would.
func editToolPart(t *testing.T, msgs []json.RawMessage, tool string, edit func(p map[string]any)) []json.RawMessage {
	t.Helper()
	var last map[string]any
	require.NoError(t, json.Unmarshal(msgs[len(msgs)-1], &last))
	found := false
	for _, p := range last["parts"].([]any) {
		pm := p.(map[string]any)
		if pm["type"] == "tool-"+tool {
			edit(pm)
			found = true
			break
		}
	}
	require.True(t, found, "no %s part", tool)
	b, err := json.Marshal(last)
	require.NoError(t, err)
	out := append([]json.RawMessage(nil), msgs...)
	out[len(out)-1] = b
	return out
}

// startChat opens conversation conv with text and returns its stored
// messages, the last one asking the browser (tool-input-available) or the
// user (approval-requested) for the answer in state.
func (b *bundle) startChat(t *testing.T, conv, text, tool, state string) []json.RawMessage {
	t.Helper()
	res := b.chat(t, b.Token, body(conv, userMsg("u1", text)))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, msgs := b.conversation(t, b.Token, conv)
	require.Equal(t, state, toolState(t, msgs, tool))
	return msgs
}

func toolState(t *testing.T, msgs []json.RawMessage, tool string) string {
	t.Helper()
	for _, m := range msgs {
		var mm map[string]any
		require.NoError(t, json.Unmarshal(m, &mm))
		for _, p := range mm["parts"].([]any) {
			pm := p.(map[string]any)
			if pm["type"] == "tool-"+tool {
				s, _ := pm["state"].(string)
				return s
			}
		}
	}
	return ""
}

// Answers from the browser holding U+0000 (which PostgreSQL cannot store)
// are refused before anything runs: otherwise the model or a bound tool
// would act on an answer the transcript can never record.
func TestChatRefusesAnswersHoldingNUL(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatRefusesAnswersHoldingNUL(t, mode)
		})
	}
}

func testChatRefusesAnswersHoldingNUL(t *testing.T, mode string) {
	b := setup(t)
	b.Mode = mode
	shown := b.startChat(t, "conv-nul", "show me the invoice", "show-invoice", "input-available")
	reminded := b.startChat(t, "conv-nul2", "remind alice", "send-reminder", "approval-requested")

	for name, tc := range map[string]struct {
		conv string
		msgs []json.RawMessage
	}{
		"frontend output": {"conv-nul", editToolPart(t, shown, "show-invoice", func(p map[string]any) {
			p["state"], p["output"] = "output-available", map[string]any{"shown": "yes\u0000"}
		})},
		"frontend output's member name": {"conv-nul", editToolPart(t, shown, "show-invoice", func(p map[string]any) {
			p["state"], p["output"] = "output-available", map[string]any{"sh\u0000own": "yes"}
		})},
		"frontend error": {"conv-nul", editToolPart(t, shown, "show-invoice", func(p map[string]any) {
			p["state"], p["errorText"] = "output-error", "no\u0000"
		})},
		// Past the 1,000 bytes the confirmation registry keeps of a reason.
		"confirmation reason": {"conv-nul2", editToolPart(t, reminded, "send-reminder", func(p map[string]any) {
			a := p["approval"].(map[string]any)
			p["state"] = "approval-responded"
			p["approval"] = map[string]any{"id": a["id"], "approved": true, "reason": strings.Repeat("a", 1001) + "\u0000"}
		})},
	} {
		res := b.chat(t, b.Token, body(tc.conv, anyList(tc.msgs)...))
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, "%s: %s", name, res.Body)
		require.Contains(t, string(res.Body), "NUL", name)
	}
	require.Len(t, b.Model.Requests(), 2, "the model never ran on a refused answer")
	require.Zero(t, b.Reminders("alice"), "the bound tool never ran")
	_, stored := b.conversation(t, b.Token, "conv-nul2")
	require.Equal(t, "approval-requested", toolState(t, stored, "send-reminder"), "nothing was written")
}

// A browser answer that Go reads as JSON but PostgreSQL's jsonb cannot
// store (an unpaired UTF-16 surrogate escape), or with a number no
// JavaScript client can send and Go cannot compare (past ±1.8e308), is
// refused like U+0000, before the model reads it.
func TestChatRefusesAnswersPostgresCannotStore(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testChatRefusesAnswersPostgresCannotStore(t, mode)
		})
	}
}

func testChatRefusesAnswersPostgresCannotStore(t *testing.T, mode string) {
	b := setup(t)
	b.Mode = mode
	shown := b.startChat(t, "conv-odd", "show me the invoice", "show-invoice", "input-available")
	for output, says := range map[string]string{
		`{"shown":"\ud800"}`:        "surrogate",
		`{"shown":"a\udc00b"}`:      "surrogate",
		`{"shown":"\ud800\u0041"}`:  "surrogate",
		`{"shown":1e1000000}`:       "1.8e308",
		`{"shown":true,"z":-1e400}`: "1.8e308",
	} {
		msgs := editToolPart(t, shown, "show-invoice", func(p map[string]any) {
			p["state"], p["output"] = "output-available", json.RawMessage(output)
		})
		res := b.chat(t, b.Token, body("conv-odd", anyList(msgs)...))
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, "%s: %s", output, res.Body)
		require.Contains(t, string(res.Body), says, output)
	}
	require.Len(t, b.Model.Requests(), 1, "the model never ran on a refused answer")
	_, stored := b.conversation(t, b.Token, "conv-odd")
	require.Equal(t, "input-available", toolState(t, stored, "show-invoice"), "nothing was written")

	// A surrogate pair is a character like any other.
	msgs := editToolPart(t, shown, "show-invoice", func(p map[string]any) {
		p["state"], p["output"] = "output-available", json.RawMessage(`{"shown":"\ud83d\ude00"}`)
	})
	res := b.chat(t, b.Token, body("conv-odd", anyList(msgs)...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
}

// jsRoundTrip is JSON.stringify(JSON.parse(raw)) as a browser does it:
// numbers become float64, and ±Infinity is written as null.
func jsRoundTrip(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	var conv func(any) any
	conv = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = conv(e)
			}
		case []any:
			for i, e := range x {
				x[i] = conv(e)
			}
		case json.Number:
			f, _ := strconv.ParseFloat(string(x), 64)
			if math.IsInf(f, 0) {
				return nil
			}
			return f
		}
		return x
	}
	out, err := json.Marshal(conv(v))
	require.NoError(t, err)
	return out
}

// A model's tool arguments that jsonb cannot store (U+0000, an unpaired
// surrogate) or that a JavaScript client cannot send back as they are (a
// number past ±1.8e308 comes back as null) are kept as text and the call
// is a tool error: stored as given, the answer could not be saved or the
// conversation could never be continued. U+0000 in the model's text is
// stored as U+FFFD.
func TestChatModelArgumentsNoClientCanEchoAreATextInputAndAToolError(t *testing.T) {
	t.Parallel()
	for i, args := range []string{`{"n":1e400}`, `{"s":"a\u0000b"}`, `{"s":"\ud800"}`} {
		var steps, ran atomic.Int32
		b := setupWithConfig(t, steploop.Config{
			Model: funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
				if steps.Add(1) == 1 {
					return model.Step{ToolCalls: []model.ToolCall{{ID: "c1", Name: "measure", Arguments: args}}, FinishReason: "tool_calls"}, nil
				}
				_ = onText("done\x00")
				return model.Step{Text: "done\x00", FinishReason: "stop"}, nil
			}),
			Tools: registryWith("measure", capability.RiskRead, func(context.Context, capability.Call) (any, error) {
				ran.Add(1)
				return map[string]int{"ok": 1}, nil
			}),
		})
		conv := fmt.Sprintf("conv-args-%d", i)
		res := b.chat(t, b.Token, body(conv, userMsg("u1", "measure")))
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		require.Equal(t, "finish", res.Chunks[len(res.Chunks)-1]["type"], "%s: %s", args, res.Body)
		require.Zero(t, ran.Load(), args)
		status, stored := b.conversation(t, b.Token, conv)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "output-error", toolState(t, stored, "measure"), args)
		require.Contains(t, string(stored[1]), "done\ufffd")
		for i := range stored {
			stored[i] = jsRoundTrip(t, stored[i])
		}
		res = b.chat(t, b.Token, body(conv, anyList(stored, userMsg("u2", "again"))...))
		require.Equal(t, http.StatusOK, res.Status, "%s: the stored transcript, as a browser sends it back, is refused: %s", args, res.Body)
	}
}
