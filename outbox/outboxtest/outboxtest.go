// Package outboxtest helps tests see the events a transaction recorded.
package outboxtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
)

// Emitter returns the service's emitter (subscribers in the fact's
// transaction, their jobs inserted by River's InsertManyTx) with one
// subscriber, a recorder whose job per event Events reads back.
func Emitter(t testing.TB) *outbox.Emitter {
	t.Helper()
	e, err := outbox.NewEmitter(nil, recorder{})
	require.NoError(t, err)
	return e
}

// recordedArgs is a recorded event, on a queue no worker works.
type recordedArgs struct {
	Event outbox.Event `json:"event"`
}

const recordedKind = "outboxtest.event"

func (recordedArgs) Kind() string { return recordedKind }

func (recordedArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: "outboxtest"} }

type recorder struct{}

func (recorder) HandleEventTx(_ context.Context, _ pgx.Tx, ev outbox.Event) ([]river.InsertManyParams, error) {
	return []river.InsertManyParams{{Args: recordedArgs{Event: ev}}}, nil
}

// Events returns the events db holds, oldest first: in a test's
// transaction, those it recorded.
func Events(t testing.TB, db store.Executor) []outbox.Event {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT args FROM river_job WHERE kind = $1 ORDER BY id`, recordedKind)
	require.NoError(t, err)
	defer rows.Close()
	var out []outbox.Event
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var r recordedArgs
		require.NoError(t, json.Unmarshal(raw, &r))
		out = append(out, r.Event)
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
