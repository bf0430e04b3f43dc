package steploop

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// reapedText is the error a reader of a run whose replica died gets.
const reapedText = "The server answering this stopped before it finished; what it wrote is stored. Send a message to continue."

// reap ends a run whose replica died (its lease expired or was given up
// without the run ending), unless it turns out alive. Readers that find
// their run dead, the stop route and the sweep call it.
func (s *Service) reap(ctx context.Context, run uuid.UUID) error {
	return store.WithTx(ctx, s.cfg.DB, func(ctx context.Context, tx pgx.Tx) error {
		return s.reapTx(ctx, tx, run, nil)
	})
}

// reapTx ends a dead run in tx: the answer it was writing is rebuilt from
// its log (head and batches, as a client that followed it holds it), its
// calls left without a result are ended as interrupted and stored, marked
// interrupted, and the run's log ends with an error chunk and [DONE] for
// its readers. holder is the caller's lease on the conversation (open's),
// or nil: then the run is reaped only once its lease has expired or is
// gone, and a lease it still names is given back.
func (s *Service) reapTx(ctx context.Context, tx pgx.Tx, run uuid.UUID, holder *Lease) error {
	var (
		conv, msgID, head string
		pos               int
		token             uuid.UUID
		ended, live       bool
	)
	err := tx.QueryRow(ctx, `
		SELECT r.conversation_id, r.message_id, r.position, r.lease_token, r.head, r.ended_at IS NOT NULL,
		       coalesce(c.busy_token = r.lease_token AND c.busy_until >= now(), false)
		  FROM chat_runs r JOIN conversations c ON c.id = r.conversation_id
		 WHERE r.id = $1
		   FOR UPDATE OF r, c`, run).Scan(&conv, &msgID, &pos, &token, &head, &ended, &live)
	if errors.Is(err, pgx.ErrNoRows) || ended || (live && holder == nil) {
		return nil
	}
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT sse FROM chat_run_batches WHERE run_id = $1 ORDER BY seq`, run)
	if err != nil {
		return err
	}
	batches, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	a := newApplier()
	for _, b := range append([]string{head}, batches...) {
		if err := a.sse([]byte(b)); err != nil {
			return err
		}
	}
	tail := a.cut()
	stored, err := messageQuery(ctx, tx, `
		SELECT id, role, parts, metadata FROM conversation_messages
		 WHERE conversation_id = $1 AND position = $2 AND id = $3`, conv, pos, msgID)
	if err != nil {
		return err
	}
	stored = append(stored, Message{})
	serverOnly(&a.m, stored[0])
	l := holder
	if l == nil {
		l = &Lease{Conversation: Conversation{ID: conv}, token: token}
	}
	_, err = messagePutHeld(ctx, tx, l, pos, a.m, putReaping, runWrite{run: run, seq: len(batches), batch: tail, end: true})
	if errors.Is(err, errLeaseLost) {
		// Another request holds the conversation and will reap the run
		// when it opens; it is not this caller's to store.
		return nil
	}
	return err
}

// putReaping is messagePutHeld's statement for a reaper: its lease CTE
// yields the conversation while its lease is the dead run's, given back,
// or open's own lease.
var putReaping = newMessagePut(`
		UPDATE conversations SET busy_token = CASE WHEN busy_token = $2 AND busy_until < now() THEN NULL ELSE busy_token END,
		       busy_until = CASE WHEN busy_token = $2 AND busy_until < now() THEN NULL ELSE busy_until END
		 WHERE id = $1 AND (busy_token IS NULL OR busy_token = $2 OR busy_until < now())
		RETURNING id`)

// cut ends what the run left open as a client that followed it must see
// it: a call whose arguments were streaming gets an input error, a call
// of the server's without a result is interrupted (its outcome unknown),
// and the answer's metadata says it was interrupted. It returns the
// chunks that do so, then an error chunk and [DONE], already applied.
func (a *applier) cut() []byte {
	var b []byte
	emit := func(c chunk) {
		b = append(b, frame(c)...)
		raw, _ := json.Marshal(c)
		var w wireChunk
		_ = json.Unmarshal(raw, &w)
		a.chunk(w)
	}
	for i := range a.m.Parts {
		p := a.m.Parts[i]
		switch {
		case p.State == StateInputStreaming:
			emit(chunk{"type": "tool-input-error", "toolCallId": p.ToolCallID, "toolName": p.ToolName(),
				"input": mustJSON(a.raw[p.ToolCallID]), "errorText": errCutCall.Detail})
		case p.IsTool() && (p.State == StateInputAvailable || p.State == StateApprovalResponded):
			emit(chunk{"type": "tool-output-error", "toolCallId": p.ToolCallID, "errorText": interruptedError.Detail})
		}
	}
	md := Metadata{FinishReason: finishInterrupted}
	if a.m.Metadata != nil {
		md = *a.m.Metadata
		md.FinishReason = finishInterrupted
	}
	emit(chunk{"type": "message-metadata", "messageMetadata": &md})
	b = append(b, frame(chunk{"type": "error", "errorText": reapedText})...)
	return append(b, doneFrame...)
}

// serverOnly copies the members the log does not carry (what the model
// reads of a tool result) from the stored copy of the answer into m, for
// each call in the same state; calls the reaper ended get theirs.
func serverOnly(m *Message, stored Message) {
	byID := map[string]Part{}
	for _, p := range stored.Parts {
		if p.IsTool() {
			byID[p.ToolCallID] = p
		}
	}
	for i := range m.Parts {
		p := &m.Parts[i]
		if !p.IsTool() {
			continue
		}
		if s, ok := byID[p.ToolCallID]; ok && s.State == p.State {
			p.ModelResult = s.ModelResult
		}
		if p.State == StateOutputError && len(p.ModelResult) == 0 {
			p.ModelResult = mustJSON(map[string]any{"error": map[string]string{"code": codeNoResult, "message": p.ErrorText}})
		}
	}
}

// SweepRuns deletes the runs that ended more than ReplayWindow ago and
// reaps those whose replica died without anyone asking for them since:
// their answer is stored, marked interrupted, and their conversation
// freed. Run it every 30 s or so.
func (s *Service) SweepRuns(ctx context.Context) error {
	dead, err := runSweep(ctx, s.cfg.DB, s.cfg.ReplayWindow)
	if err != nil {
		return err
	}
	for _, d := range dead {
		if err := s.reap(ctx, d.ID); err != nil {
			return err
		}
	}
	return nil
}
