package confirm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/confirm"
	"github.com/stretchr/testify/require"
)

const input = `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","note":"hello"}`

func requireInvalid(t *testing.T, out confirm.Outcome, reason confirm.Reason) {
	t.Helper()
	require.False(t, out.Ran, "handler must not run")
	require.Nil(t, out.Pause)
	require.NotNil(t, out.Result)
	require.Equal(t, confirm.CodeConfirmationInvalid, out.Result.Error.Code)
	require.Equal(t, reason, out.Result.Error.Reason)
	require.NotEmpty(t, out.Result.Error.Message)
}

func TestApproveRunsOnceWithEvidence(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		ctx := context.Background()
		conf, h := b.pause(t, input)

		raw, err := base64.RawURLEncoding.DecodeString(conf.ID)
		require.NoError(t, err)
		require.Len(t, raw, 32, "id carries 256 random bits")
		require.Equal(t, "send-reminder", conf.Capability)
		require.Equal(t, h, conf.InputHash)
		require.Equal(t, b.conv, conf.ConversationID)
		require.Equal(t, b.principal, conf.Principal)
		require.Equal(t, "call-1", conf.ToolCallID)
		require.Equal(t, b.clock.Now(), conf.CreatedAt)
		require.Equal(t, b.clock.Now().Add(confirm.DefaultTTL), conf.ExpiresAt)
		require.Nil(t, conf.UsedAt)
		require.Zero(t, b.runCount(), "a pause runs nothing")

		b.clock.Advance(time.Minute)
		out, err := b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}), b.run)
		require.NoError(t, err)
		require.True(t, out.Ran)
		require.NoError(t, out.Err)
		require.Nil(t, out.Result)
		require.Equal(t, map[string]string{"sent": "yes"}, out.Output)
		require.Equal(t, 1, b.runCount())

		stored, err := b.reg.Get(ctx, conf.ID)
		require.NoError(t, err)
		require.NotNil(t, stored.UsedAt)
		require.Equal(t, b.clock.Now(), *stored.UsedAt)
		require.Equal(t, confirm.DecisionApproved, stored.Decision)
	})
}

func TestDenyIsTypedAndConsumed(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		ctx := context.Background()
		conf, h := b.pause(t, input)

		out, err := b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: false, Reason: "wrong customer"}), b.run)
		require.NoError(t, err)
		requireInvalid(t, out, confirm.ReasonDenied)
		require.Equal(t, "wrong customer", out.Result.Error.UserReason)
		require.Equal(t, conf.ID, out.Result.Error.ConfirmationID)

		stored, err := b.reg.Get(ctx, conf.ID)
		require.NoError(t, err)
		require.Equal(t, confirm.DecisionDenied, stored.Decision)
		require.Equal(t, "wrong customer", stored.DecisionReason)

		// A forged approval of the denied confirmation is a replay.
		out, err = b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}), b.run)
		require.NoError(t, err)
		requireInvalid(t, out, confirm.ReasonReplayed)
		require.Zero(t, b.runCount())
	})
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		ctx := context.Background()

		inTime, h := b.pause(t, input)
		late, _ := b.pause(t, input)
		b.clock.Advance(confirm.DefaultTTL - time.Microsecond)
		out, err := b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: inTime.ID, Approved: true}), b.run)
		require.NoError(t, err)
		require.True(t, out.Ran, "one microsecond before expiry still counts")

		b.clock.Advance(time.Microsecond)
		out, err = b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: late.ID, Approved: true}), b.run)
		require.NoError(t, err)
		requireInvalid(t, out, confirm.ReasonExpired)
		require.Equal(t, 1, b.runCount())
	})
}

func TestTTLIsConfigurable(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		ctl, err := confirm.NewController(confirm.Config{Registry: b.reg, Mode: confirm.ModeWait, Now: b.clock.Now, TTL: 30 * time.Second})
		require.NoError(t, err)
		b.ctl = ctl
		conf, h := b.pause(t, input)
		require.Equal(t, conf.CreatedAt.Add(30*time.Second), conf.ExpiresAt)
		b.clock.Advance(31 * time.Second)
		out, err := b.ctl.Call(context.Background(), b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}), b.run)
		require.NoError(t, err)
		requireInvalid(t, out, confirm.ReasonExpired)
	})
}

func TestInputIsBoundByCanonicalHash(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		present string
		match   bool
	}{
		{"one byte changed", `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","note":"hellp"}`, false},
		{"keys reordered, value changed", `{"note":"hello!","invoice_id":"0190a5a0-0000-7000-8000-000000000001"}`, false},
		{"number instead of string", `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","note":"hello","n":1}`, false},
		{"keys reordered, same values", `{ "note" : "hello",
			"invoice_id": "0190a5a0-0000-7000-8000-000000000001" }`, true},
		{"escaped but equal", `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","note":"h\u0065llo"}`, true},
	}
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		ctx := context.Background()
		for _, tc := range cases {
			conf, h := b.pause(t, input)
			presented := hash(t, tc.present)
			before := b.runCount()
			out, err := b.ctl.Call(ctx, b.req("send-reminder", presented, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}), b.run)
			require.NoError(t, err, tc.name)
			if tc.match {
				require.Equal(t, h, presented, tc.name)
				require.True(t, out.Ran, tc.name)
				require.Equal(t, before+1, b.runCount(), tc.name)
				continue
			}
			requireInvalid(t, out, confirm.ReasonInputMismatch)
			require.Equal(t, before, b.runCount(), tc.name)
			// A mismatch spends the evidence: the right input afterwards
			// is a replay, not a second chance.
			out, err = b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}), b.run)
			require.NoError(t, err)
			requireInvalid(t, out, confirm.ReasonReplayed)
		}
	})
}

func TestSameEvidenceTwiceIsReplayed(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		conf, h := b.pause(t, input)
		ev := &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}
		out, err := b.ctl.Call(context.Background(), b.req("send-reminder", h, "call-1", ev), b.run)
		require.NoError(t, err)
		require.True(t, out.Ran)
		out, err = b.ctl.Call(context.Background(), b.req("send-reminder", h, "call-1", ev), b.run)
		require.NoError(t, err)
		requireInvalid(t, out, confirm.ReasonReplayed)
		require.Equal(t, 1, b.runCount())
	})
}

func TestForeignEvidenceIsUnknownAndNotSpent(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		ctx := context.Background()
		conf, h := b.pause(t, input)
		ev := &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}

		otherConv := b.req("send-reminder", h, "call-1", ev)
		otherConv.ConversationID = "conv-other"
		otherUser := b.req("send-reminder", h, "call-1", ev)
		otherUser.Principal = b.newUser(t)
		otherCap := b.req("void-reminder", h, "call-1", ev)
		made := b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: confirm.NewID(), Approved: true})
		empty := b.req("send-reminder", h, "call-1", &confirm.Evidence{Approved: true})
		for name, req := range map[string]confirm.Request{"conversation": otherConv, "principal": otherUser, "capability": otherCap, "made up id": made, "empty id": empty} {
			out, err := b.ctl.Call(ctx, req, b.run)
			require.NoError(t, err, name)
			requireInvalid(t, out, confirm.ReasonUnknown)
		}
		require.Zero(t, b.runCount())

		// None of those spent it: the rightful caller still can.
		out, err := b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", ev), b.run)
		require.NoError(t, err)
		require.True(t, out.Ran)
	})
}

func TestTwoPhaseRequiresThenAcceptsEvidence(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeTwoPhase)
		ctx := context.Background()
		h := hash(t, input)
		out, err := b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", nil), b.run)
		require.NoError(t, err)
		require.Nil(t, out.Pause, "two-phase never pauses the step")
		require.False(t, out.Ran)
		require.NotNil(t, out.Result)
		require.Equal(t, confirm.CodeConfirmationRequired, out.Result.Error.Code)
		require.Empty(t, out.Result.Error.Reason)
		id := out.Result.Error.ConfirmationID
		stored, err := b.reg.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, h, stored.InputHash)
		require.Zero(t, b.runCount())

		// The model retries on a later turn: a new tool call, same input.
		out, err = b.ctl.Call(ctx, b.req("send-reminder", h, "call-2", &confirm.Evidence{ConfirmationID: id, Approved: true}), b.run)
		require.NoError(t, err)
		require.True(t, out.Ran)
		require.Equal(t, 1, b.runCount())
	})
}

func TestHandlerErrorIsTheToolResult(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		conf, h := b.pause(t, input)
		boom := errors.New("mail server down")
		calls := 0
		out, err := b.ctl.Call(context.Background(), b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}),
			func(context.Context) (any, error) { calls++; return nil, boom })
		require.NoError(t, err, "the handler's failure is the tool's result, not the controller's")
		require.True(t, out.Ran)
		require.ErrorIs(t, out.Err, boom)
		require.Equal(t, 1, calls)
	})
}

func TestConcurrentEvidenceRunsOnce(t *testing.T) {
	t.Parallel()
	forEachOnPool(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		conf, h := b.pause(t, input)
		const n = 32
		outs := make([]confirm.Outcome, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				outs[i], errs[i] = b.ctl.Call(context.Background(), b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: true}), b.run)
			}()
		}
		close(start)
		wg.Wait()
		ran, replayed := 0, 0
		for i := range n {
			require.NoError(t, errs[i])
			if outs[i].Ran {
				ran++
			} else if outs[i].Result != nil && outs[i].Result.Error.Reason == confirm.ReasonReplayed {
				replayed++
			}
		}
		require.Equal(t, 1, ran)
		require.Equal(t, n-1, replayed)
		require.Equal(t, 1, b.runCount())
	})
}

func TestSweepKeepsRecentlyExpired(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		ctx := context.Background()
		old, h := b.pause(t, input)
		b.clock.Advance(confirm.DefaultTTL + time.Minute)
		recent, _ := b.pause(t, input)

		n, err := b.ctl.Sweep(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "expired less than the retention ago: kept so a late answer reads expired")

		b.clock.Advance(confirm.DefaultRetention)
		n, err = b.ctl.Sweep(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = b.reg.Get(ctx, old.ID)
		require.ErrorIs(t, err, confirm.ErrUnknown)
		_, err = b.reg.Get(ctx, recent.ID)
		require.NoError(t, err)

		out, err := b.ctl.Call(ctx, b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: recent.ID, Approved: true}), b.run)
		require.NoError(t, err)
		requireInvalid(t, out, confirm.ReasonExpired)
	})
}

func TestMalformedRequestWritesNothing(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		h := hash(t, input)
		bad := map[string]func(r *confirm.Request){
			"no capability":   func(r *confirm.Request) { r.Capability = "" },
			"raw input hash":  func(r *confirm.Request) { r.InputHash = input },
			"upper-case hash": func(r *confirm.Request) { r.InputHash = "A" + h[1:] },
			"no conversation": func(r *confirm.Request) { r.ConversationID = "" },
			"no principal":    func(r *confirm.Request) { r.Principal = uuid.Nil },
		}
		for name, mutate := range bad {
			req := b.req("send-reminder", h, "call-1", nil)
			mutate(&req)
			_, err := b.ctl.Call(context.Background(), req, b.run)
			require.Error(t, err, name)
		}
		require.Zero(t, rows(t, b.reg))
		require.Zero(t, b.runCount())
	})
}

func TestNewControllerRefusesBadConfig(t *testing.T) {
	t.Parallel()
	_, err := confirm.NewController(confirm.Config{Mode: confirm.ModeWait})
	require.Error(t, err)
	_, err = confirm.NewController(confirm.Config{Registry: confirm.NewMemory(), Mode: "later"})
	require.ErrorContains(t, err, "unknown mode")
	_, err = confirm.NewController(confirm.Config{Registry: confirm.NewMemory()})
	require.Error(t, err, "the mode is chosen explicitly, never defaulted")
}

func TestTypedResultJSON(t *testing.T) {
	t.Parallel()
	b := setup(t, impls[0], confirm.ModeWait)
	out, err := b.ctl.Call(context.Background(), b.req("send-reminder", hash(t, input), "call-1", &confirm.Evidence{ConfirmationID: "nope", Approved: true}), b.run)
	require.NoError(t, err)
	raw, err := json.Marshal(out.Result)
	require.NoError(t, err)
	var doc map[string]map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "CONFIRMATION_INVALID", doc["error"]["code"])
	require.Equal(t, "unknown", doc["error"]["reason"])
	require.Contains(t, doc["error"]["message"], "call the tool again")
}

func TestAgentToolsetIsRemoteWait(t *testing.T) {
	t.Parallel()
	require.Equal(t, confirm.Toolset{Topology: "remote", Confirmations: "wait"}, confirm.AgentToolset)
}
