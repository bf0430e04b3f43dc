package steploop_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/steploop"
	"github.com/stretchr/testify/require"
)

// call sends a bodiless request to path as token and reads the answer
// whole (within 20 s).
func (b *bundle) call(t *testing.T, method, path, token string) chatResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the answer was not read whole: %s", raw)
	return chatResult{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// resume reads GET /v1/chat/{id}/stream as token to its end.
func (b *bundle) resume(t *testing.T, token, id string) chatResult {
	t.Helper()
	res := b.call(t, http.MethodGet, "/v1/chat/"+id+"/stream", token)
	if res.Status == http.StatusOK {
		res.Chunks, res.Done = parseSSE(t, res.Body)
	}
	return res
}

// requireReplayIsStored checks the run log's invariant: the latest run's
// head and batches rebuild exactly the stored answer (server-only members
// aside), so a reader that replays it holds the stored transcript.
func (b *bundle) requireReplayIsStored(t *testing.T, id string) {
	t.Helper()
	got, err := steploop.ReplayLatestRun(context.Background(), b.Pool, id)
	require.NoError(t, err)
	_, msgs := b.conversation(t, b.Token, id)
	replayed, err := json.Marshal(got.UI())
	require.NoError(t, err)
	require.JSONEq(t, string(msgs[len(msgs)-1]), string(replayed), "%s: the replayed answer is the stored one", id)
}

// No run, a conversation that does not exist (a new chat mounting with
// resume: true), another owner's, an id no conversation can have, and a run
// that ended before the replay window: 204 alike, nothing disclosed.
func TestResumeIs204WhenNothingRunsForThePrincipal(t *testing.T) {
	t.Parallel()
	b := setupWithConfig(t, steploop.Config{Model: instantModel(), Limits: steploop.Limits{ReplayWindow: 2 * time.Second}})
	res := b.chat(t, b.Token, body("resume-mine", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, http.StatusOK, b.resume(t, b.Token, "resume-mine").Status, "within the replay window")
	other := b.otherClerk(t)
	for what, c := range map[string]struct{ token, id string }{
		"unknown conversation":  {b.Token, "resume-unknown"},
		"another owner's":       {other, "resume-mine"},
		"not a conversation id": {b.Token, "not%20one"},
	} {
		res := b.resume(t, c.token, c.id)
		require.Equal(t, http.StatusNoContent, res.Status, what)
		require.Empty(t, res.Body, what)
	}
	require.Eventually(t, func() bool { return b.resume(t, b.Token, "resume-mine").Status == http.StatusNoContent },
		5*time.Second, 50*time.Millisecond, "a run that ended before the window is not replayed")
}

// Several readers, joining at different moments of a run, each get it
// from its start and follow it live to its end: the same chunks as the
// client that started it, then [DONE].
func TestResumeReplaysAndFollowsARunToItsEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan chatResult, 1)
	go func() { started <- b.chat(t, b.Token, body("resume-follow", userMsg("u1", "tell a slow story"))) }()
	<-b.Model.started
	var wg sync.WaitGroup
	readers := make([]chatResult, 3)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 150 * time.Millisecond)
			readers[i] = b.resume(t, b.Token, "resume-follow")
		}()
	}
	wg.Wait()
	first := <-started
	require.True(t, first.Done)
	for i, r := range readers {
		require.Equal(t, http.StatusOK, r.Status, "reader %d", i)
		require.Equal(t, "v1", r.Header.Get(steploop.HeaderStream))
		require.True(t, r.Done, "reader %d ends with [DONE]", i)
		require.Equal(t, first.Chunks, r.Chunks, "reader %d holds what the client that started the run holds", i)
	}
	b.requireReplayIsStored(t, "resume-follow")
}

// A run that continues an answer (the browser approved a confirmation)
// replays that answer whole: its head rebuilds the parts it had when the
// run began, the approval answer included.
func TestResumeReplaysAContinuedAnswerWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgs := b.startChat(t, "resume-cont", "remind alice", "send-reminder", "approval-requested")
	approved, _ := approveAll(t, msgs)
	res := b.chat(t, b.Token, body("resume-cont", anyList(msgs[:len(msgs)-1], approved)...))
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	replay := b.resume(t, b.Token, "resume-cont")
	require.Equal(t, http.StatusOK, replay.Status)
	types := chunkTypes(replay.Chunks)
	require.Equal(t, []string{"start", "start-step", "text-start", "text-delta", "text-end",
		"tool-input-available", "tool-approval-request", "tool-approval-response"}, types[:8],
		"the head rebuilds the answer as the run found it")
	require.Contains(t, types[8:], "tool-output-available")
	b.requireReplayIsStored(t, "resume-cont")
}

// Every kind of run leaves a log that rebuilds exactly the stored answer:
// tools, text, tool errors, a failed model, a step limit.
func TestRunLogsRebuildTheStoredAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for id, text := range map[string]string{
		"log-read": "please look up alpha", "log-broken": "broken tools", "log-loop": "loop please",
		"log-hello": "hello", "log-frontend": "show me the invoice", "log-boom": "boom",
	} {
		res := b.chat(t, b.Token, body(id, userMsg("u1", text)))
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		b.requireReplayIsStored(t, id)
	}
	b.Model.fail.Store(true)
	res := b.chat(t, b.Token, body("log-fail", userMsg("u1", "hello")))
	require.Equal(t, http.StatusOK, res.Status)
	b.requireReplayIsStored(t, "log-fail")
}

// richAnswer holds every kind of part a stored answer can hold, in every
// state.
func richAnswer() steploop.Message {
	text, think, cut := "Looking", "hmm", "cut"
	yes, no := true, false
	return steploop.Message{ID: "a1", Role: "assistant",
		Metadata: &steploop.Metadata{CreatedAt: "2026-01-01T00:00:00.000Z", Model: "m", Usage: &steploop.Usage{InputTokens: 5, OutputTokens: 7, TotalTokens: 12}},
		Parts: []steploop.Part{
			{Type: "step-start"},
			{Type: "reasoning", ID: "reasoning-1", Text: &think, State: "done"},
			{Type: "text", Text: &text, State: "done"},
			{Type: "tool-get-customer", ToolCallID: "c1", State: steploop.StateOutputAvailable, Input: json.RawMessage(`{"customer_id":"x","n":1.5}`), Output: json.RawMessage(`{"name":"A"}`)},
			{Type: "tool-show-invoice", ToolCallID: "c2", State: steploop.StateOutputError, Input: json.RawMessage(`{"id":1}`), ErrorText: "browser failed"},
			{Type: "tool-bad", ToolCallID: "c3", State: steploop.StateOutputError, Input: json.RawMessage(`"{bad"`), ErrorText: "not JSON"},
			{Type: "data-approval", ID: "ap1", Data: json.RawMessage(`{"status":"pending"}`)},
			{Type: "step-start"},
			{Type: "tool-update-draft", ToolCallID: "c4", State: steploop.StateApprovalResponded, Input: json.RawMessage(`{"a":1}`), Approval: &steploop.PartApproval{ID: "cf1", Approved: &yes, Reason: "ok"}},
			{Type: "tool-delete-line", ToolCallID: "c5", State: steploop.StateOutputDenied, Input: json.RawMessage(`{"b":2}`), Approval: &steploop.PartApproval{ID: "cf2", Approved: &no}},
			{Type: "tool-update-x", ToolCallID: "c6", State: steploop.StateApprovalRequested, Input: json.RawMessage(`{"c":3}`), Approval: &steploop.PartApproval{ID: "cf3"}},
			{Type: "tool-show-invoice", ToolCallID: "c7", State: steploop.StateInputAvailable, Input: json.RawMessage(`{"id":2}`)},
			{Type: "text", Text: &cut, State: "streaming"},
		}}
}

// The head of a replay rebuilds every kind of stored part (the client's
// side of this is checked by runs.e2e.mjs with the same answer).
func TestRunHeadRebuildsEveryKindOfPart(t *testing.T) {
	t.Parallel()
	m := richAnswer()
	got, err := steploop.ApplySSE(steploop.RunHead(m))
	require.NoError(t, err)
	want, _ := json.Marshal(m)
	have, _ := json.Marshal(got)
	require.JSONEq(t, string(want), string(have))
	require.True(t, strings.HasPrefix(string(steploop.RunHead(m)), `data: {"messageId":"a1","messageMetadata":`), "the head starts with the answer's start chunk")
}
