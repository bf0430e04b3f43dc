package confirm_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// The registry contract: both implementations, called directly.

var t0 = time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)

func mintDirect(t *testing.T, reg confirm.Registry, c confirm.Confirmation) confirm.Confirmation {
	t.Helper()
	got, err := reg.Create(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, c, got, "stored as given")
	return got
}

func TestRegistryContract(t *testing.T) {
	t.Parallel()
	forEachOnPool(t, func(t *testing.T, im impl) {
		reg, newUser := im.new(t)
		ctx := context.Background()
		user := newUser(t)
		c := confirm.Confirmation{
			ID: confirm.NewID(), Capability: "send-reminder", InputHash: hash(t, input), ConversationID: "conv-1",
			Principal: user, ToolCallID: "call-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
		}
		mintDirect(t, reg, c)
		_, err := reg.Create(ctx, c)
		require.Error(t, err, "ids are unique")

		got, err := reg.Get(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, c, got)
		_, err = reg.Get(ctx, confirm.NewID())
		require.ErrorIs(t, err, confirm.ErrUnknown)

		key := confirm.Key{ID: c.ID, ConversationID: c.ConversationID, Principal: c.Principal, Capability: c.Capability}
		for name, k := range map[string]confirm.Key{
			"conversation": {ID: c.ID, ConversationID: "conv-2", Principal: user, Capability: c.Capability},
			"principal":    {ID: c.ID, ConversationID: c.ConversationID, Principal: newUser(t), Capability: c.Capability},
			"capability":   {ID: c.ID, ConversationID: c.ConversationID, Principal: user, Capability: "other"},
			"id":           {ID: confirm.NewID(), ConversationID: c.ConversationID, Principal: user, Capability: c.Capability},
		} {
			_, err := reg.Consume(ctx, k, confirm.DecisionApproved, "", t0)
			require.ErrorIs(t, err, confirm.ErrUnknown, name)
		}
		got, err = reg.Get(ctx, c.ID)
		require.NoError(t, err)
		require.Nil(t, got.UsedAt, "a mismatched key consumes nothing")

		at := t0.Add(time.Second)
		used, err := reg.Consume(ctx, key, confirm.DecisionDenied, "no", at)
		require.NoError(t, err)
		require.Equal(t, confirm.DecisionDenied, used.Decision)
		require.Equal(t, "no", used.DecisionReason)
		require.Equal(t, at, *used.UsedAt)
		got, err = reg.Get(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, used, got)

		_, err = reg.Consume(ctx, key, confirm.DecisionApproved, "", at.Add(time.Second))
		require.ErrorIs(t, err, confirm.ErrReplayed)
		got, err = reg.Get(ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, used, got, "a replay changes nothing")
	})
}

func TestRegistryReasonIsBounded(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		reg, newUser := im.new(t)
		c := mintDirect(t, reg, confirm.Confirmation{
			ID: confirm.NewID(), Capability: "send-reminder", InputHash: hash(t, input), ConversationID: "conv-1",
			Principal: newUser(t), ToolCallID: "call-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
		})
		long := "a" + strings.Repeat("é", 1000) // 2001 bytes; byte 1000 is mid-rune
		used, err := reg.Consume(context.Background(), confirm.Key{ID: c.ID, ConversationID: c.ConversationID, Principal: c.Principal, Capability: c.Capability}, confirm.DecisionDenied, long, t0)
		require.NoError(t, err)
		require.True(t, utf8.ValidString(used.DecisionReason))
		require.LessOrEqual(t, len(used.DecisionReason), 1000)
		require.True(t, strings.HasPrefix(long, used.DecisionReason))
		require.Greater(t, len(used.DecisionReason), 990)
	})
}

func TestRegistrySweepDeletesOnlyExpired(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		reg, newUser := im.new(t)
		ctx := context.Background()
		user := newUser(t)
		var ids []string
		for i := range 3 {
			c := mintDirect(t, reg, confirm.Confirmation{
				ID: confirm.NewID(), Capability: "send-reminder", InputHash: hash(t, input), ConversationID: "conv-1",
				Principal: user, ToolCallID: "call-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Duration(i+1) * time.Minute),
			})
			ids = append(ids, c.ID)
		}
		n, err := reg.Sweep(ctx, t0.Add(2*time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "strictly before the cutoff")
		_, err = reg.Get(ctx, ids[0])
		require.ErrorIs(t, err, confirm.ErrUnknown)
		for _, id := range ids[1:] {
			_, err = reg.Get(ctx, id)
			require.NoError(t, err)
		}
	})
}

func TestRegistryConcurrentConsumeOneWinner(t *testing.T) {
	t.Parallel()
	forEachOnPool(t, func(t *testing.T, im impl) {
		reg, newUser := im.new(t)
		c := mintDirect(t, reg, confirm.Confirmation{
			ID: confirm.NewID(), Capability: "send-reminder", InputHash: hash(t, input), ConversationID: "conv-1",
			Principal: newUser(t), ToolCallID: "call-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
		})
		key := confirm.Key{ID: c.ID, ConversationID: c.ConversationID, Principal: c.Principal, Capability: c.Capability}
		const n = 32
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = reg.Consume(context.Background(), key, confirm.DecisionApproved, "", t0)
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			require.ErrorIs(t, err, confirm.ErrReplayed)
		}
		require.Equal(t, 1, won)
	})
}

// Across replicas: two registries on two pools of one database stand for
// two replicas racing for the same evidence; exactly one wins.
func TestPostgresSingleUseAcrossPools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	poolA, poolB := storetest.PoolFor(t, url), storetest.PoolFor(t, url)
	user, err := identity.UserCreate(ctx, poolA, identity.UserCreateParams{Username: "chat-user", Role: identity.RoleClerk})
	require.NoError(t, err)
	replicas := []confirm.Registry{confirm.NewPostgres(poolA), confirm.NewPostgres(poolB)}
	c := mintDirect(t, replicas[0], confirm.Confirmation{
		ID: confirm.NewID(), Capability: "send-reminder", InputHash: hash(t, input), ConversationID: "conv-1",
		Principal: user.ID, ToolCallID: "call-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
	})
	key := confirm.Key{ID: c.ID, ConversationID: c.ConversationID, Principal: c.Principal, Capability: c.Capability}
	const n = 32
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = replicas[i%2].Consume(ctx, key, confirm.DecisionApproved, "", t0)
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		require.ErrorIs(t, err, confirm.ErrReplayed)
	}
	require.Equal(t, 1, won)
}

// Deleting a user deletes their confirmations: evidence never outlives its
// principal.
func TestPostgresConfirmationsFollowTheirUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := storetest.Tx(t)
	user, err := identity.UserCreate(ctx, tx, identity.UserCreateParams{Username: "chat-user", Role: identity.RoleClerk})
	require.NoError(t, err)
	reg := confirm.NewPostgres(tx)
	c := mintDirect(t, reg, confirm.Confirmation{
		ID: confirm.NewID(), Capability: "send-reminder", InputHash: hash(t, input), ConversationID: "conv-1",
		Principal: user.ID, ToolCallID: "call-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
	})
	_, err = tx.Exec(ctx, `DELETE FROM users WHERE id = $1`, user.ID)
	require.NoError(t, err)
	_, err = reg.Get(ctx, c.ID)
	require.ErrorIs(t, err, confirm.ErrUnknown)
}

// The table refuses rows the controller would never write, so a bug
// elsewhere cannot store weak or unbound evidence.
func TestPostgresRefusesMalformedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg, newUser := poolImpls[1].new(t)
	user := newUser(t)
	good := confirm.Confirmation{
		ID: confirm.NewID(), Capability: "send-reminder", InputHash: hash(t, input), ConversationID: "conv-1",
		Principal: user, ToolCallID: "call-1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
	}
	for name, mutate := range map[string]func(c *confirm.Confirmation){
		"short id":        func(c *confirm.Confirmation) { c.ID = "abc" },
		"raw input":       func(c *confirm.Confirmation) { c.InputHash = input },
		"expires at once": func(c *confirm.Confirmation) { c.ExpiresAt = c.CreatedAt },
		"unknown user":    func(c *confirm.Confirmation) { c.Principal = uuid.New() },
	} {
		c := good
		mutate(&c)
		_, err := reg.Create(ctx, c)
		require.Error(t, err, name)
	}
	require.Zero(t, rows(t, reg))
}
