package steploop

import (
	"context"
	"errors"
	"sync"

	"github.com/invoiced/invoiced/store"
)

// ReplayLatestRun rebuilds the answer of conversation id's latest run from
// its log (head and batches), as a reader that followed it holds it.
func ReplayLatestRun(ctx context.Context, db store.Executor, id string) (Message, error) {
	var head string
	if err := db.QueryRow(ctx, `
		SELECT head FROM chat_runs WHERE conversation_id = $1 ORDER BY started_at DESC LIMIT 1`, id).Scan(&head); err != nil {
		return Message{}, err
	}
	a := newApplier()
	if err := a.sse([]byte(head)); err != nil {
		return Message{}, err
	}
	rows, err := db.Query(ctx, `
		SELECT b.sse FROM chat_run_batches b
		 WHERE b.run_id = (SELECT id FROM chat_runs WHERE conversation_id = $1 ORDER BY started_at DESC LIMIT 1)
		 ORDER BY b.seq`, id)
	if err != nil {
		return Message{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return Message{}, err
		}
		if err := a.sse([]byte(b)); err != nil {
			return Message{}, err
		}
	}
	return a.m, rows.Err()
}

// RunHead is the SSE that rebuilds m at the start of a replay.
func RunHead(m Message) []byte { return runHead(m) }

// ApplySSE rebuilds a message from SSE as the client does.
func ApplySSE(b []byte) (Message, error) {
	a := newApplier()
	err := a.sse(b)
	return a.m, err
}

// Stopped returns a channel closed once the run of conversation id that
// runs here is cancelled by a stop request: after that, the run starts
// nothing more. The run must be running.
func (s *Service) Stopped(id string) <-chan struct{} {
	done := make(chan struct{})
	var once sync.Once
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	for run, lr := range s.runs.live {
		if lr.lease.ID != id {
			continue
		}
		// A new entry, not a changed one: the heartbeat may hold the old.
		s.runs.live[run] = &liveRun{lease: lr.lease, cancel: func(cause error) {
			lr.cancel(cause)
			if errors.Is(cause, errStopped) {
				once.Do(func() { close(done) })
			}
		}}
		return done
	}
	panic("steploop: no run of conversation " + id + " runs here")
}
