package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/events"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// EventArgs is an event as the dispatch job carries it: Data is the JSON
// the emitter marshalled in the fact's transaction.
type EventArgs struct {
	ID        uuid.UUID       `json:"id"`
	Type      events.Type     `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// Kind is River's name for the dispatch job.
func (EventArgs) Kind() string { return "event.dispatch" }

// InsertOpts puts dispatch jobs on the events queue.
func (EventArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueEvents} }

// Emitter implements events.Emitter by inserting a dispatch job in the
// caller's transaction (River's InsertTx). It holds no connection, so the
// CLI and the service emit alike; the replicas running `serve` work the
// jobs.
type Emitter struct {
	client *river.Client[pgx.Tx]
}

var _ events.Emitter = (*Emitter)(nil)

// NewEmitter returns an emitter. log receives River's warnings; nil
// discards them.
func NewEmitter(log *slog.Logger) (*Emitter, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := river.NewClient(riverpgxv5.New(nil), &river.Config{Logger: quiet(log)})
	if err != nil {
		return nil, fmt.Errorf("outbox emitter: %w", err)
	}
	return &Emitter{client: c}, nil
}

// InsertTx enqueues a job in tx (a manual redelivery, say): the client
// that emits events enqueues other jobs alike.
func (e *Emitter) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) error {
	_, err := e.client.InsertTx(ctx, tx, args, opts)
	return err
}

// EmitTx records ev in tx.
func (e *Emitter) EmitTx(ctx context.Context, tx pgx.Tx, ev events.Event) error {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return fmt.Errorf("event %s: marshal data: %w", ev.Type, err)
	}
	_, err = e.client.InsertTx(ctx, tx, EventArgs{ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt, Data: data}, nil)
	if err != nil {
		return fmt.Errorf("event %s: enqueue: %w", ev.Type, err)
	}
	return nil
}
