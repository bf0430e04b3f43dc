// Package outboxtest helps tests see the events a transaction recorded.
package outboxtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/store"
	"github.com/stretchr/testify/require"
)

// Emitter returns the emitter the service uses (River's InsertTx).
func Emitter(t testing.TB) *outbox.Emitter {
	t.Helper()
	e, err := outbox.NewEmitter(nil)
	require.NoError(t, err)
	return e
}

// Events returns the events db holds, recorded and not yet dispatched,
// oldest first: in a test's transaction, those it recorded.
func Events(t testing.TB, db store.Executor) []outbox.EventArgs {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT args FROM river_job WHERE kind = $1 ORDER BY id`, outbox.EventArgs{}.Kind())
	require.NoError(t, err)
	defer rows.Close()
	var out []outbox.EventArgs
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var ev outbox.EventArgs
		require.NoError(t, json.Unmarshal(raw, &ev))
		out = append(out, ev)
	}
	require.NoError(t, rows.Err())
	return out
}

// Types returns the types of Events(t, db).
func Types(t testing.TB, db store.Executor) []events.Type {
	t.Helper()
	var out []events.Type
	for _, ev := range Events(t, db) {
		out = append(out, ev.Type)
	}
	return out
}
