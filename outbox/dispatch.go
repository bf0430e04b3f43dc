package outbox

import (
	"context"
	"fmt"

	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Subscriber turns an event into follow-up work inside the dispatcher's
// transaction: rows of its own (a delivery per endpoint) and the jobs that
// act on them, which the dispatcher inserts in the same transaction.
type Subscriber interface {
	HandleEventTx(ctx context.Context, tx pgx.Tx, ev EventArgs) ([]river.InsertManyParams, error)
}

// dispatchWorker fans an event out to the subscribers. Their rows, the
// jobs they ask for and the dispatch job's completion commit together, so
// an event is fanned out exactly once however often the job is tried. An
// event nobody subscribes to wrote nothing, so River completes its job as
// any other (in a batch), without a round trip of its own.
type dispatchWorker struct {
	river.WorkerDefaults[EventArgs]
	db   store.Executor
	subs []Subscriber
}

func (w *dispatchWorker) Work(ctx context.Context, job *river.Job[EventArgs]) error {
	return store.WithTx(ctx, w.db, func(ctx context.Context, tx pgx.Tx) error {
		var jobs []river.InsertManyParams
		for _, s := range w.subs {
			more, err := s.HandleEventTx(ctx, tx, job.Args)
			if err != nil {
				return fmt.Errorf("dispatch %s %s: %w", job.Args.Type, job.Args.ID, err)
			}
			jobs = append(jobs, more...)
		}
		if len(jobs) == 0 {
			return nil
		}
		if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertManyTx(ctx, tx, jobs); err != nil {
			return fmt.Errorf("dispatch %s %s: enqueue: %w", job.Args.Type, job.Args.ID, err)
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}
