package steploop_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// panicConfirmer is a confirm controller with a bug.
type panicConfirmer struct{}

func (panicConfirmer) Call(context.Context, confirm.Request, func(context.Context) (any, error)) (confirm.Outcome, error) {
	panic("confirm controller bug")
}

// A panic between a server tool's call and its result ends that call as a
// tool error (its effect unknown), in the stream and in the transcript:
// stored unresolved, the call could never be answered and every later
// message would be refused.
func TestChatPanicMidToolLeavesNoCallUnresolved(t *testing.T) {
	t.Parallel()
	reg := registryWith("send-reminder", capability.RiskBound, func(context.Context, capability.Call) (any, error) { return map[string]any{"ok": true}, nil })
	steps := 0
	b := setupWithConfig(t, steploop.Config{Tools: reg, Confirm: panicConfirmer{},
		Model: funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
			steps++
			if steps == 1 {
				return model.Step{ToolCalls: []model.ToolCall{{ID: "c1", Name: "send-reminder", Arguments: `{}`}}}, nil
			}
			return model.Step{Text: "ok"}, nil
		})})
	res := b.chat(t, b.Token, body("conv-wedge", userMsg("u1", "remind")))
	require.Equal(t, http.StatusOK, res.Status)
	require.True(t, res.Done)
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"])
	require.Contains(t, chunkTypes(res.Chunks), "tool-output-error")
	_, msgs := b.conversation(t, b.Token, "conv-wedge")
	require.Equal(t, "output-error", toolState(t, msgs, "send-reminder"))
	res = b.chat(t, b.Token, body("conv-wedge", anyList(msgs, userMsg("u2", "again"))...))
	require.Equal(t, http.StatusOK, res.Status, "conversation wedged after a panic mid-tool: %s", res.Body)
}

// After a failed credential re-check the step's remaining calls are not
// run, a frontend one included: each ends as a tool error instead of
// waiting for an answer the client will not send (ai@7 does not resubmit
// after an error), so the user's next message, once signed in again, is
// accepted.
func TestChatAfterAFailedRecheckNoCallIsLeftPending(t *testing.T) {
	t.Parallel()
	reg := registryWith("lookup-thing", capability.RiskRead, func(context.Context, capability.Call) (any, error) { return map[string]any{"ok": true}, nil })
	var b *bundle
	steps := 0
	b = setupWithConfig(t, steploop.Config{Tools: reg, CredentialMaxAge: time.Nanosecond,
		Model: funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
			steps++
			if steps == 1 {
				if err := identity.TokenRevoke(context.Background(), b.Pool, b.Token); err != nil {
					t.Errorf("revoke: %v", err)
				}
				return model.Step{ToolCalls: []model.ToolCall{
					{ID: "c1", Name: "lookup-thing", Arguments: `{}`},
					{ID: "c2", Name: "show-invoice", Arguments: `{"invoice_id":"0190e0a4-8c2b-7cc8-9d7e-5a1f7e2b4c11"}`},
				}}, nil
			}
			return model.Step{Text: "ok"}, nil
		})})
	res := b.chat(t, b.Token, body("conv-stop", userMsg("u1", "look and show")))
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "error", res.Chunks[len(res.Chunks)-1]["type"])
	// The user signs in again (a new token for the same user).
	var u identity.User
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT id FROM users WHERE username='clerk'`).Scan(&u.ID))
	tok, err := identity.TokenCreate(context.Background(), b.Pool, u.ID, "again")
	require.NoError(t, err)
	_, msgs := b.conversation(t, tok, "conv-stop")
	require.Equal(t, "output-error", toolState(t, msgs, "show-invoice"), "no frontend call dispatched after the turn stopped")
	res = b.chat(t, tok, body("conv-stop", anyList(msgs, userMsg("u2", "continue"))...))
	require.Equal(t, http.StatusOK, res.Status, "next request refused: %s", res.Body)
}
