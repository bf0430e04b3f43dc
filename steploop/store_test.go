package steploop_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

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
