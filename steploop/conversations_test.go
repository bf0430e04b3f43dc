package steploop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// list reads GET /v1/conversations with query q as token.
func (b *bundle) list(t *testing.T, token string, q url.Values) (int, []byte) {
	t.Helper()
	res := b.call(t, http.MethodGet, "/v1/conversations?"+q.Encode(), token)
	return res.Status, res.Body
}

// An owner's conversations, newest first, in keyset pages, each titled by
// its first message; another owner's are not there; a cursor of another
// list is refused by name.
func TestConversationListPagesTheOwnersNewestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("é", 100)
	for i, text := range []string{"first question", "second question", "third question", long} {
		res := b.chat(t, b.Token, body(fmt.Sprintf("list-%d", i), userMsg("u1", text)))
		require.Equal(t, http.StatusOK, res.Status)
	}
	res := b.chat(t, b.Other, body("list-theirs", userMsg("u1", "not yours")))
	require.Equal(t, http.StatusOK, res.Status)

	type page struct {
		Data []struct {
			ID, Title string
		} `json:"data"`
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	}
	var got []string
	q := url.Values{"limit": {"3"}}
	for {
		status, raw := b.list(t, b.Token, q)
		require.Equal(t, http.StatusOK, status, string(raw))
		var p page
		require.NoError(t, json.Unmarshal(raw, &p))
		for _, c := range p.Data {
			got = append(got, c.ID+": "+c.Title)
		}
		if !p.HasMore {
			require.Nil(t, p.NextCursor)
			break
		}
		q.Set("cursor", *p.NextCursor)
	}
	require.Equal(t, []string{"list-3: " + strings.Repeat("é", 80), "list-2: third question", "list-1: second question", "list-0: first question"}, got)

	for what, q := range map[string]url.Values{
		"a cursor of a UUID list": {"cursor": {"eyJ0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJpZCI6IjAxOTBlMGE0LThjMmItN2NjOC05ZDdlLTVhMWY3ZTJiNGMxMSJ9"}},
		"not a cursor":            {"cursor": {"nope"}},
		"a page too large":        {"limit": {"101"}},
	} {
		status, raw := b.list(t, b.Token, q)
		require.Equal(t, http.StatusUnprocessableEntity, status, what)
		require.Equal(t, problem.CodeValidation, problemCode(t, raw), what)
	}
}

// A conversation holds at most MaxMessages: past it a new message is a
// 422 naming the bound, in either request mode, and nothing is stored.
func TestChatRefusesAConversationPastMaxMessages(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setupWithConfig(t, steploop.Config{Model: instantModel(), Limits: steploop.Limits{MaxMessages: 4}})
			b.Mode = mode
			res := b.chat(t, b.Token, body("max-msgs", userMsg("u1", "one")))
			require.Equal(t, http.StatusOK, res.Status)
			_, msgs := b.conversation(t, b.Token, "max-msgs")
			res = b.chat(t, b.Token, body("max-msgs", anyList(msgs, userMsg("u2", "two"))...))
			require.Equal(t, http.StatusOK, res.Status)
			_, msgs = b.conversation(t, b.Token, "max-msgs")
			res = b.chat(t, b.Token, body("max-msgs", anyList(msgs, userMsg("u3", "three"))...))
			require.Equal(t, http.StatusUnprocessableEntity, res.Status, string(res.Body))
			require.Contains(t, string(res.Body), "at most 4 messages")
			_, after := b.conversation(t, b.Token, "max-msgs")
			require.Len(t, after, 4, "nothing was stored")
		})
	}
}

// The model is sent the newest whole turns that fit the context budget,
// with the system prompt: a tool call is never sent without its result,
// and the context begins with the user. Both request modes bound it alike.
func TestChatContextBudgetLeavesTheOldestTurnsOut(t *testing.T) {
	t.Parallel()
	for _, mode := range requestModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rec := &recordingModel{}
			scriptInto(t, rec, toolRule("look", "lookup-thing", `{"key":"alpha"}`))
			b := setupWithConfig(t, steploop.Config{Model: rec, Tools: lookupRegistry(), Limits: steploop.Limits{ContextBudget: 250}})
			b.Mode = mode
			var msgs []json.RawMessage
			for i := range 12 {
				text := fmt.Sprintf("turn %d: hello", i)
				if i%3 == 0 {
					text = fmt.Sprintf("turn %d: look it up", i)
				}
				res := b.chat(t, b.Token, body("budget", anyList(msgs, userMsg(fmt.Sprintf("u%d", i), text))...))
				require.Equal(t, http.StatusOK, res.Status, string(res.Body))
				_, msgs = b.conversation(t, b.Token, "budget")
			}
			req := rec.last()
			require.NotEmpty(t, req.System)
			require.Equal(t, model.RoleUser, req.Messages[0].Role, "the context begins with the user")
			size, calls := 0, map[string]bool{}
			for _, m := range req.Messages {
				size += len(m.Content)
				for _, c := range m.ToolCalls {
					calls[c.ID] = true
					size += len(c.Arguments)
				}
				if m.Role == model.RoleTool {
					require.True(t, calls[m.ToolCallID], "a tool result is sent with its call")
				}
			}
			require.NotEqual(t, "turn 0: look it up", req.Messages[0].Content, "the oldest turns were left out")
			require.LessOrEqual(t, size, 250)
			require.Greater(t, size, 250-80, "as many turns as fit (one turn is at most 80 bytes)")
			require.Equal(t, "turn 11: hello", req.Messages[len(req.Messages)-1].Content, "the newest turn is sent")
		})
	}
}

// Usage is asked for in the stream, sent to the client in the finish
// chunk's metadata, stored with the answer and counted by model.
func TestChatUsageIsSentStoredAndCounted(t *testing.T) {
	t.Parallel()
	fm := newFakeModel(t)
	prov, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: fm.URL + "/v1", APIKey: "k", Model: "usage-model", MaxRetries: -1})
	require.NoError(t, err)
	b := setupWithConfig(t, steploop.Config{Model: prov})
	res := b.chat(t, b.Token, body("usage", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "usage-model", res.Chunks[0]["messageMetadata"].(map[string]any)["model"], "start names the model")
	finish := res.Chunks[len(res.Chunks)-1]
	require.Equal(t, "finish", finish["type"])
	md, err := json.Marshal(finish["messageMetadata"])
	require.NoError(t, err)
	_, msgs := b.conversation(t, b.Token, "usage")
	var stored struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(msgs[1], &stored))
	require.JSONEq(t, string(md), string(stored.Metadata), "the finish chunk's metadata is stored")
	var m steploop.Metadata
	require.NoError(t, json.Unmarshal(stored.Metadata, &m))
	// The fake model reports 10 input tokens per message (system and user),
	// 5 output, 1 cached and 2 reasoning.
	require.Equal(t, steploop.Usage{InputTokens: 20, OutputTokens: 5, TotalTokens: 25,
		InputTokenDetails: steploop.InputTokenDetails{CacheReadTokens: 1}, OutputTokenDetails: steploop.OutputTokenDetails{ReasoningTokens: 2}}, *m.Usage)
	require.Equal(t, "stop", m.FinishReason)
	for kind, n := range map[string]float64{"input": 20, "output": 5, "cached_input": 1, "reasoning": 2} {
		require.Equal(t, n, testutil.ToFloat64(steploop.TokensTotal.WithLabelValues("usage-model", kind)), kind)
	}
}

// lookupRegistry is lookup-thing alone: a read tool answering its key.
func lookupRegistry() *capability.Registry {
	return registryWith("lookup-thing", capability.RiskRead, func(_ context.Context, call capability.Call) (any, error) {
		var in struct{ Key string }
		_ = json.Unmarshal(call.Input, &in)
		return map[string]any{"key": in.Key, "value": "v-" + in.Key}, nil
	})
}
