package steploop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// errLeaseLost is what a write by a request that no longer holds its
// conversation's lease becomes: its lease expired and another request
// took the conversation, so its message is not stored over that one's.
var errLeaseLost = problem.Conflict(CodeConversationBusy,
	"this request's hold on the conversation expired and another request took it; the answer was not stored")

// runWrite is what a run's write adds to its log: a batch (none when
// empty) at seq, and whether the run ends with it.
type runWrite struct {
	run   uuid.UUID // uuid.Nil: the write belongs to no run
	seq   int
	batch []byte
	end   bool
}

// MessagePutRelease stores m at position and releases the lease in one
// statement (one round trip, one commit at the end of every request). It
// writes only while the lease is still this request's: otherwise nothing
// is written and the error is CONVERSATION_BUSY.
func MessagePutRelease(ctx context.Context, db store.Executor, l *Lease, position int, m Message) error {
	_, err := messagePutHeld(ctx, db, l, position, m, putReleasing, runWrite{})
	return err
}

// MessagePutLeased is MessagePut for a request that holds l: it writes
// only while the lease is still this request's (the row lock makes a
// concurrent take-over wait, then the check sees it), and is
// CONVERSATION_BUSY otherwise, writing nothing.
func MessagePutLeased(ctx context.Context, db store.Executor, l *Lease, position int, m Message) error {
	_, err := messagePutHeld(ctx, db, l, position, m, putHeld, runWrite{})
	return err
}

// messagePutHeld's statements, by lease CTE. Given the conversation id
// as $1 and the lease token as $2, each CTE yields the conversation's id
// only while the lease is still held.
var (
	putReleasing = newMessagePut(`
		UPDATE conversations SET busy_token = NULL, busy_until = NULL, updated_at = now()
		 WHERE id = $1 AND busy_token = $2
		RETURNING id`)
	putHeld = newMessagePut(`
		SELECT id FROM conversations WHERE id = $1 AND busy_token = $2 FOR SHARE`)
)

// messagePutHeld stores m at position in one statement whose lease CTE
// yields the conversation's id only while l is still held, and writes w to
// the run's log in the same statement: the log then never lacks what the
// transcript holds. It is CONVERSATION_BUSY, writing nothing, when the
// lease is gone. It reports whether the run's log took the write (false:
// the run had been ended by whoever reaped it).
func messagePutHeld(ctx context.Context, db store.Executor, l *Lease, position int, m Message, put messagePut, w runWrite) (bool, error) {
	parts, err := partsJSON(m)
	if err != nil {
		return false, err
	}
	var (
		held   bool
		logged int
	)
	err = db.QueryRow(ctx, string(put),
		l.ID, l.token, position, m.ID, m.Role, parts, metadataJSON(m), modelChars(m), w.run, w.seq, string(w.batch), w.end,
	).Scan(&held, &logged, new(int))
	if err != nil {
		return false, store.MapError(err, "message")
	}
	if !held {
		return false, errLeaseLost
	}
	return logged > 0, nil
}

// messagePut is messagePutHeld's statement for one lease CTE, joined once
// rather than on every write: the closing write of each chat is one of
// them, and a statement's text is 2 KB.
type messagePut string

func newMessagePut(lease string) messagePut {
	return messagePut(`
		WITH l AS (` + lease + `
		), m AS (
			INSERT INTO conversation_messages (conversation_id, position, id, role, parts, metadata, model_chars, chars_before)
			SELECT id, $3, $4, $5, $6, $7, $8, ` + charsBefore + ` FROM l
			ON CONFLICT (conversation_id, position) DO UPDATE
			   SET parts = EXCLUDED.parts, metadata = EXCLUDED.metadata, model_chars = EXCLUDED.model_chars, updated_at = now()
		), ` + runWriteCTEs + `
		SELECT EXISTS (SELECT 1 FROM l), (SELECT count(*) FROM r), (SELECT count(*) FROM n)`)
}

// charsBefore is what the messages before position $3 of conversation $1
// add to the model's context.
const charsBefore = `coalesce((SELECT p.chars_before + p.model_chars FROM conversation_messages p
		WHERE p.conversation_id = $1 AND p.position = $3 - 1), 0)`

// runWriteCTEs append batch $11 at seq $10 to run $9's log, end it when
// $12, and wake the run's followers (and, at its end, a stop request's
// waiter) with a notification naming it. They act only while the lease CTE
// l holds and the run has not ended (a reaper may have ended it); the
// run's row lock orders them against a reader registering as a follower,
// so either the reader reads the batch or this statement notifies it.
const runWriteCTEs = `r AS (
			SELECT id, followers, stop_requested FROM chat_runs
			 WHERE id = $9 AND ended_at IS NULL AND EXISTS (SELECT 1 FROM l) FOR UPDATE
		), b AS (
			INSERT INTO chat_run_batches (run_id, seq, sse) SELECT id, $10, $11 FROM r WHERE $11 <> ''
		), e AS (
			UPDATE chat_runs SET ended_at = now() WHERE $12 AND id = (SELECT id FROM r)
		), n AS (
			SELECT pg_notify('` + chatChannel + `', $1) FROM r WHERE followers > 0 OR ($12 AND stop_requested)
		)`

// partsJSON is m's parts as stored: a JSON array, empty for none.
func partsJSON(m Message) ([]byte, error) {
	if m.Parts == nil {
		return []byte("[]"), nil
	}
	parts, err := json.Marshal(m.Parts)
	if err != nil {
		return nil, fmt.Errorf("marshal parts: %w", err)
	}
	return parts, nil
}

// metadataJSON is m's metadata as stored, or nil (NULL) for none.
func metadataJSON(m Message) []byte {
	if m.Metadata == nil {
		return nil
	}
	return mustJSON(m.Metadata)
}

// MessageList returns a conversation's messages in order.
func MessageList(ctx context.Context, db store.Executor, conversationID string) ([]Message, error) {
	return messageQuery(ctx, db, `
		SELECT id, role, parts, metadata FROM conversation_messages
		 WHERE conversation_id = $1 ORDER BY position`, conversationID)
}

func messageQuery(ctx context.Context, db store.Executor, sql string, args ...any) ([]Message, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, store.MapError(err, "messages")
	}
	msgs, err := pgx.CollectRows(rows, scanMessage)
	if err != nil {
		return nil, store.MapError(err, "messages")
	}
	return msgs, nil
}

func scanMessage(row pgx.CollectableRow) (Message, error) {
	var (
		m               Message
		parts, metadata []byte
	)
	if err := row.Scan(&m.ID, &m.Role, &parts, &metadata); err != nil {
		return m, err
	}
	return m, m.decode(parts, metadata)
}

// decode fills m's parts and metadata from their stored JSON.
func (m *Message) decode(parts, metadata []byte) error {
	if err := json.Unmarshal(parts, &m.Parts); err != nil {
		return fmt.Errorf("message %s: parts: %w", m.ID, err)
	}
	if metadata != nil {
		if err := json.Unmarshal(metadata, &m.Metadata); err != nil {
			return fmt.Errorf("message %s: metadata: %w", m.ID, err)
		}
	}
	return nil
}

// MessagePut stores m at position, replacing what was there (the assistant
// message grows step by step). It does not look at the lease: the caller
// took it in the same transaction.
func MessagePut(ctx context.Context, db store.Executor, conversationID string, position int, m Message) error {
	parts, err := partsJSON(m)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `
		INSERT INTO conversation_messages (conversation_id, position, id, role, parts, metadata, model_chars, chars_before)
		VALUES ($1, $3, $2, $4, $5, $6, $7, `+charsBefore+`)
		ON CONFLICT (conversation_id, position) DO UPDATE
		   SET parts = EXCLUDED.parts, metadata = EXCLUDED.metadata, model_chars = EXCLUDED.model_chars, updated_at = now()`,
		conversationID, m.ID, position, m.Role, parts, metadataJSON(m), modelChars(m))
	if store.IsUniqueViolation(err, "conversation_messages_id_key") {
		return problem.New(http.StatusConflict, CodeTranscriptMismatch, fmt.Sprintf("message id %q is already used in this conversation", m.ID))
	}
	return store.MapError(err, "message")
}

// messageLast is the conversation's last message and its position, or
// position -1 when it has none.
func messageLast(ctx context.Context, db store.Executor, conversationID string) (*Message, int, error) {
	var (
		m               Message
		pos             int
		parts, metadata []byte
	)
	err := db.QueryRow(ctx, `
		SELECT position, id, role, parts, metadata FROM conversation_messages
		 WHERE conversation_id = $1 ORDER BY position DESC LIMIT 1`, conversationID).Scan(&pos, &m.ID, &m.Role, &parts, &metadata)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, 0, store.MapError(err, "messages")
	}
	return &m, pos, m.decode(parts, metadata)
}
