package steploop_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		// This process is a replica of runs_e2e_test.go's, not a test run.
		os.Exit(runReplica())
	}
	os.Exit(storetest.Main(m))
}

// Opening a chat inside a caller's transaction must not turn off
// synchronous commit for the rest of that transaction.
func TestConversationCreateWithMessageLeavesACallersTransactionSynchronous(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := storetest.Tx(t)
	u, err := identity.UserCreate(ctx, tx, identity.UserCreateParams{Username: "sync", Role: identity.RoleClerk})
	require.NoError(t, err)
	text := "hello"
	_, ok, err := steploop.ConversationCreateWithMessage(ctx, tx, "conv-sync", u.ID, time.Minute,
		steploop.Message{ID: "u1", Role: "user", Parts: []steploop.Part{{Type: "text", Text: &text}}})
	require.NoError(t, err)
	require.True(t, ok)
	var setting string
	require.NoError(t, tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting))
	require.Equal(t, "on", setting)
}

// A request whose lease expired and was taken by another request writes
// nothing: neither its message over the other's, nor a release of the
// other's lease. The refusal is CONVERSATION_BUSY, so the turn ends with
// "could not be saved" instead of a [DONE] for an answer that is not there.
func TestMessageWritesNeedTheLeaseStillHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := storetest.Tx(t)
	u, err := identity.UserCreate(ctx, tx, identity.UserCreateParams{Username: "late", Role: identity.RoleClerk})
	require.NoError(t, err)
	text := "hello"
	user := steploop.Message{ID: "u1", Role: "user", Parts: []steploop.Part{{Type: "text", Text: &text}}}
	answer := steploop.Message{ID: "a1", Role: "assistant", Parts: []steploop.Part{{Type: "text", Text: &text}}}

	held, ok, err := steploop.ConversationCreateWithMessage(ctx, tx, "conv-held", u.ID, time.Minute, user)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, steploop.MessagePutLeased(ctx, tx, held, 1, answer))
	require.NoError(t, steploop.MessagePutRelease(ctx, tx, held, 1, answer))

	late, ok, err := steploop.ConversationCreateWithMessage(ctx, tx, "conv-late", u.ID, time.Minute, user)
	require.NoError(t, err)
	require.True(t, ok)
	// Its lease expires and another request takes the conversation.
	_, err = tx.Exec(ctx, `UPDATE conversations SET busy_until = now() - interval '1 second' WHERE id = 'conv-late'`)
	require.NoError(t, err)
	taker, err := steploop.ConversationAcquire(ctx, tx, "conv-late", u.ID, time.Minute)
	require.NoError(t, err)

	for name, write := range map[string]func() error{
		"mid-turn save": func() error { return steploop.MessagePutLeased(ctx, tx, late, 1, answer) },
		"final write":   func() error { return steploop.MessagePutRelease(ctx, tx, late, 1, answer) },
	} {
		err := write()
		require.Error(t, err, name)
		require.True(t, problem.HasCode(err, steploop.CodeConversationBusy), "%s: %v", name, err)
	}
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM conversation_messages WHERE conversation_id = 'conv-late'`).Scan(&n))
	require.Equal(t, 1, n, "only the user message: the late answer was not stored")
	_, err = steploop.ConversationAcquire(ctx, tx, "conv-late", u.ID, time.Minute)
	require.True(t, problem.HasCode(err, steploop.CodeConversationBusy), "the taker's lease is still held: %v", err)
	require.NoError(t, steploop.MessagePutRelease(ctx, tx, taker, 1, answer))
}
