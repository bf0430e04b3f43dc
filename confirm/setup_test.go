package confirm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/clocktest"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/store"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// impl builds one Registry implementation and principals it accepts.
type impl struct {
	name string
	new  func(t *testing.T) (confirm.Registry, func(t *testing.T) uuid.UUID)
}

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

var memoryImpl = impl{"memory", func(t *testing.T) (confirm.Registry, func(t *testing.T) uuid.UUID) {
	return confirm.NewMemory(), func(*testing.T) uuid.UUID { return uuid.New() }
}}

// postgresImpl is the Postgres registry over db(t), making users with
// names of their own.
func postgresImpl(db func(t testing.TB) store.Executor) impl {
	return impl{"postgres", func(t *testing.T) (confirm.Registry, func(t *testing.T) uuid.UUID) {
		db := db(t)
		return confirm.NewPostgres(db), func(t *testing.T) uuid.UUID {
			var b [6]byte
			_, _ = rand.Read(b[:])
			u, err := identity.UserCreate(context.Background(), db, identity.UserCreateParams{Username: "chat-" + hex.EncodeToString(b[:]), Role: identity.RoleClerk})
			require.NoError(t, err)
			return u.ID
		}
	}}
}

var (
	// impls are the implementations every contract and controller test
	// runs against: the in-memory registry and the Postgres one in a
	// transaction of the test's own, rolled back at its end.
	impls = []impl{memoryImpl, postgresImpl(func(t testing.TB) store.Executor { return storetest.Tx(t) })}
	// poolImpls have the Postgres registry on a database of the test's
	// own, for tests that one transaction cannot serve: calls from many
	// goroutines at once, and statements that fail (a failed statement
	// aborts the transaction it runs in).
	poolImpls = []impl{memoryImpl, postgresImpl(func(t testing.TB) store.Executor { return storetest.Pool(t) })}
)

// forEach runs fn as a parallel subtest per implementation of impls.
func forEach(t *testing.T, fn func(t *testing.T, im impl)) {
	t.Helper()
	forEachOf(t, impls, fn)
}

// forEachOnPool is forEach over poolImpls, for tests that call one
// registry from many goroutines or expect a statement to fail.
func forEachOnPool(t *testing.T, fn func(t *testing.T, im impl)) {
	t.Helper()
	forEachOf(t, poolImpls, fn)
}

func forEachOf(t *testing.T, impls []impl, fn func(t *testing.T, im impl)) {
	t.Helper()
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			t.Parallel()
			fn(t, im)
		})
	}
}

// bundle is a controller over one registry with a settable clock, a
// principal and a conversation, and a handler that counts its runs.
type bundle struct {
	ctl       *confirm.Controller
	reg       confirm.Registry
	clock     *clocktest.Clock
	principal uuid.UUID
	newUser   func(t *testing.T) uuid.UUID
	conv      string

	mu   sync.Mutex
	runs int
}

func setup(t *testing.T, im impl, mode confirm.Mode) *bundle {
	t.Helper()
	reg, newUser := im.new(t)
	b := &bundle{reg: reg, clock: clocktest.New(time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)), newUser: newUser, conv: "conv-" + uuid.NewString()}
	b.principal = newUser(t)
	ctl, err := confirm.NewController(confirm.Config{Registry: reg, Mode: mode, Now: b.clock.Now})
	require.NoError(t, err)
	b.ctl = ctl
	return b
}

// run is the handler: it counts its runs.
func (b *bundle) run(context.Context) (any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs++
	return map[string]string{"sent": "yes"}, nil
}

func (b *bundle) runCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs
}

func (b *bundle) req(capabilityName, inputHash, toolCallID string, ev *confirm.Evidence) confirm.Request {
	return confirm.Request{Capability: capabilityName, InputHash: inputHash, ConversationID: b.conv, ToolCallID: toolCallID, Principal: b.principal, Evidence: ev}
}

// pause mints a confirmation in wait mode for input.
func (b *bundle) pause(t *testing.T, input string) (confirm.Confirmation, string) {
	t.Helper()
	h := hash(t, input)
	out, err := b.ctl.Call(context.Background(), b.req("send-reminder", h, "call-1", nil), b.run)
	require.NoError(t, err)
	require.NotNil(t, out.Pause, "wait mode pauses a call without evidence")
	require.False(t, out.Ran)
	require.Nil(t, out.Result)
	return *out.Pause, h
}

func hash(t *testing.T, input string) string {
	t.Helper()
	h, err := jsondoc.Hash([]byte(input))
	require.NoError(t, err)
	return h
}

// rows counts what the registry holds, through a sweep far in the future
// (so only on registries the test owns).
func rows(t *testing.T, reg confirm.Registry) int64 {
	t.Helper()
	n, err := reg.Sweep(context.Background(), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	return n
}
