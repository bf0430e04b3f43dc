package steploop

import (
	"context"

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
