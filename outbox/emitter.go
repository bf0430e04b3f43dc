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

// Event is an event as subscribers receive it: Data is the JSON the
// emitter marshalled in the fact's transaction.
type Event struct {
	ID        uuid.UUID       `json:"id"`
	Type      events.Type     `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// Subscriber turns an event into follow-up work inside the fact's own
// transaction: rows of its own (a delivery per endpoint) and the jobs that
// act on them, which the emitter inserts in the same transaction. A
// subscriber reads no settings of the process it runs in (the CLI emits
// as the server does); its workers, in `serve`, do.
type Subscriber interface {
	HandleEventTx(ctx context.Context, tx pgx.Tx, ev Event) ([]river.InsertManyParams, error)
}

// Emitter implements events.Emitter by running the subscribers in the
// caller's transaction and inserting the jobs they ask for there (River's
// InsertManyTx). It holds no connection, so the CLI and the service emit
// alike; the replicas running `serve` work the jobs.
type Emitter struct {
	client *river.Client[pgx.Tx]
	subs   []Subscriber
}

var _ events.Emitter = (*Emitter)(nil)

// NewEmitter returns an emitter over subs. log receives River's warnings;
// nil discards them.
func NewEmitter(log *slog.Logger, subs ...Subscriber) (*Emitter, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := river.NewClient(riverpgxv5.New(nil), &river.Config{Logger: quiet(log)})
	if err != nil {
		return nil, fmt.Errorf("outbox emitter: %w", err)
	}
	return &Emitter{client: c, subs: subs}, nil
}

// InsertTx enqueues a job in tx (a manual redelivery, say): the client
// that emits events enqueues other jobs alike.
func (e *Emitter) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) error {
	_, err := e.client.InsertTx(ctx, tx, args, opts)
	return err
}

// EmitTx records ev in tx: what each subscriber writes and the jobs it
// asks for commit or roll back with the fact. An event nobody subscribes
// to costs each subscriber's lookup and inserts no job.
func (e *Emitter) EmitTx(ctx context.Context, tx pgx.Tx, ev events.Event) error {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return fmt.Errorf("event %s: marshal data: %w", ev.Type, err)
	}
	out := Event{ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt, Data: data}
	var jobs []river.InsertManyParams
	for _, s := range e.subs {
		more, err := s.HandleEventTx(ctx, tx, out)
		if err != nil {
			return fmt.Errorf("event %s: %w", ev.Type, err)
		}
		jobs = append(jobs, more...)
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := e.client.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("event %s: enqueue: %w", ev.Type, err)
	}
	return nil
}
