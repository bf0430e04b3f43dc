package steploop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Problem codes of the step loop.
const (
	// CodeConversationBusy: another request is running this conversation.
	CodeConversationBusy = "CONVERSATION_BUSY"
	// CodeTranscriptMismatch: the client's message list differs from the
	// stored transcript in a way ADR-0002 does not accept.
	CodeTranscriptMismatch = "TRANSCRIPT_MISMATCH"
	// CodeModelNotConfigured: no model provider is configured.
	CodeModelNotConfigured = "MODEL_NOT_CONFIGURED"
)

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Conversation is a chat owned by the principal that opened it.
type Conversation struct {
	ID        string    `json:"id"`
	OwnerID   uuid.UUID `json:"owner_id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Lease is a held conversation: only its holder runs the loop on it.
type Lease struct {
	Conversation
	token   uuid.UUID
	created bool
}

// ConversationAcquire opens the conversation id for owner, creating it when
// new (xmax = 0 tells a fresh insert from an update), and takes its busy
// lease for ttl. Another owner's conversation is
// 404 (indistinguishable from none); a conversation whose lease is held is
// 409 CONVERSATION_BUSY. One statement decides, so of two concurrent
// requests exactly one gets the lease.
func ConversationAcquire(ctx context.Context, db store.Executor, id string, owner uuid.UUID, ttl time.Duration) (*Lease, error) {
	if !idRE.MatchString(id) {
		return nil, problem.Invalid("id", "must be 1–128 letters, digits, '_' or '-'")
	}
	token := uuid.New()
	var l Lease
	err := db.QueryRow(ctx, `
		INSERT INTO conversations (id, owner_id, busy_token, busy_until)
		VALUES ($1, $2, $3, now() + $4::interval)
		ON CONFLICT (id) DO UPDATE
		   SET busy_token = EXCLUDED.busy_token, busy_until = EXCLUDED.busy_until, updated_at = now()
		 WHERE conversations.owner_id = EXCLUDED.owner_id
		   AND (conversations.busy_until IS NULL OR conversations.busy_until < now())
		RETURNING id, owner_id, created_at, updated_at, xmax = 0`,
		id, owner, token, fmt.Sprintf("%d milliseconds", ttl.Milliseconds()),
	).Scan(&l.ID, &l.OwnerID, &l.CreatedAt, &l.UpdatedAt, &l.created)
	if errors.Is(err, pgx.ErrNoRows) {
		var other uuid.UUID
		err := db.QueryRow(ctx, `SELECT owner_id FROM conversations WHERE id = $1`, id).Scan(&other)
		if err != nil || other != owner {
			return nil, problem.NotFound("conversation")
		}
		return nil, problem.Conflict(CodeConversationBusy, "another request is running this conversation; retry when it has finished")
	}
	if err != nil {
		return nil, store.MapError(err, "conversation")
	}
	l.token = token
	return &l, nil
}

// ConversationRelease gives the lease back.
func ConversationRelease(ctx context.Context, db store.Executor, l *Lease) error {
	_, err := db.Exec(ctx, `
		UPDATE conversations SET busy_token = NULL, busy_until = NULL, updated_at = now()
		 WHERE id = $1 AND busy_token = $2`, l.ID, l.token)
	return store.MapError(err, "conversation")
}

// ConversationGet returns the owner's conversation; others' are 404.
func ConversationGet(ctx context.Context, db store.Executor, id string, owner uuid.UUID) (*Conversation, error) {
	if !idRE.MatchString(id) {
		return nil, problem.NotFound("conversation")
	}
	var c Conversation
	err := db.QueryRow(ctx, `
		SELECT id, owner_id, created_at, updated_at FROM conversations
		 WHERE id = $1 AND owner_id = $2`, id, owner).Scan(&c.ID, &c.OwnerID, &c.CreatedAt, &c.UpdatedAt)
	if err != nil {
		return nil, store.MapError(err, "conversation")
	}
	return &c, nil
}

// ConversationCreateWithMessage creates conversation id for owner with
// its first message, leased for ttl, in one statement: the common case of
// a new chat costs one round trip. It reports false, writing nothing, when
// the id is taken (the caller then takes the general path).
//
// Its commit does not wait for the WAL flush (synchronous_commit off for
// this statement's transaction only): the request's last statement,
// MessagePutRelease, commits synchronously and so flushes this one with
// it, and every effect in between commits synchronously too. A database
// crash before that fails the request either way; what a finished request
// wrote is as durable as if every statement had flushed, and a chat costs
// one disk flush, not two.
// Inside a caller's transaction it leaves the setting alone, since it
// would apply to that whole transaction.
func ConversationCreateWithMessage(ctx context.Context, db store.Executor, id string, owner uuid.UUID, ttl time.Duration, m Message) (*Lease, bool, error) {
	parts, err := partsJSON(m)
	if err != nil {
		return nil, false, err
	}
	l := Lease{token: uuid.New(), created: true}
	_, inTx := db.(pgx.Tx)
	var async *string
	if !inTx {
		off := "off"
		async = &off
	}
	err = db.QueryRow(ctx, `
		WITH async AS (
			SELECT set_config('synchronous_commit', coalesce($8::text, current_setting('synchronous_commit')), true)
		), c AS (
			INSERT INTO conversations (id, owner_id, busy_token, busy_until)
			SELECT $1, $2, $3, now() + $4::interval FROM async
			ON CONFLICT (id) DO NOTHING
			RETURNING id, owner_id, created_at, updated_at
		), m AS (
			INSERT INTO conversation_messages (conversation_id, position, id, role, parts)
			SELECT id, 0, $5, $6, $7 FROM c
		)
		SELECT id, owner_id, created_at, updated_at FROM c`,
		id, owner, l.token, fmt.Sprintf("%d milliseconds", ttl.Milliseconds()), m.ID, m.Role, parts, async,
	).Scan(&l.ID, &l.OwnerID, &l.CreatedAt, &l.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		// The statement may have committed before the error (the client
		// went away while its answer was read): give the lease back, or
		// the conversation would be busy until it expires. Only a lease
		// with this token is released, so this is safe when it did not.
		if !inTx {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = ConversationRelease(rctx, db, &Lease{Conversation: Conversation{ID: id}, token: l.token})
			cancel()
		}
		return nil, false, store.MapError(err, "conversation")
	}
	return &l, true, nil
}

// errLeaseLost is what a write by a request that no longer holds its
// conversation's lease becomes: its lease expired and another request
// took the conversation, so its message is not stored over that one's.
var errLeaseLost = problem.Conflict(CodeConversationBusy,
	"this request's hold on the conversation expired and another request took it; the answer was not stored")

// MessagePutRelease stores m at position and releases the lease in one
// statement (one round trip, one commit at the end of every request). It
// writes only while the lease is still this request's: otherwise nothing
// is written and the error is CONVERSATION_BUSY.
func MessagePutRelease(ctx context.Context, db store.Executor, l *Lease, position int, m Message) error {
	return messagePutHeld(ctx, db, l, position, m, `
		UPDATE conversations SET busy_token = NULL, busy_until = NULL, updated_at = now()
		 WHERE id = $1 AND busy_token = $2
		RETURNING id`)
}

// MessagePutLeased is MessagePut for a request that holds l: it writes
// only while the lease is still this request's (the row lock makes a
// concurrent take-over wait, then the check sees it), and is
// CONVERSATION_BUSY otherwise, writing nothing.
func MessagePutLeased(ctx context.Context, db store.Executor, l *Lease, position int, m Message) error {
	return messagePutHeld(ctx, db, l, position, m, `
		SELECT id FROM conversations WHERE id = $1 AND busy_token = $2 FOR SHARE`)
}

// messagePutHeld stores m at position in one statement whose lease CTE
// (given the conversation id as $1 and the lease token as $2) yields the
// conversation's id only while l is still held; it is CONVERSATION_BUSY,
// writing nothing, when it yields none.
func messagePutHeld(ctx context.Context, db store.Executor, l *Lease, position int, m Message, lease string) error {
	parts, err := partsJSON(m)
	if err != nil {
		return err
	}
	var held bool
	err = db.QueryRow(ctx, `
		WITH l AS (`+lease+`
		), m AS (
			INSERT INTO conversation_messages (conversation_id, position, id, role, parts)
			SELECT id, $3, $4, $5, $6 FROM l
			ON CONFLICT (conversation_id, position) DO UPDATE
			   SET parts = EXCLUDED.parts, updated_at = now()
		)
		SELECT EXISTS (SELECT 1 FROM l)`,
		l.ID, l.token, position, m.ID, m.Role, parts).Scan(&held)
	if err != nil {
		return store.MapError(err, "message")
	}
	if !held {
		return errLeaseLost
	}
	return nil
}

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

// MessageList returns a conversation's messages in order.
func MessageList(ctx context.Context, db store.Executor, conversationID string) ([]Message, error) {
	rows, err := db.Query(ctx, `
		SELECT id, role, parts FROM conversation_messages
		 WHERE conversation_id = $1 ORDER BY position`, conversationID)
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
		m     Message
		parts []byte
	)
	if err := row.Scan(&m.ID, &m.Role, &parts); err != nil {
		return m, err
	}
	if err := json.Unmarshal(parts, &m.Parts); err != nil {
		return m, fmt.Errorf("message %s: parts: %w", m.ID, err)
	}
	return m, nil
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
		INSERT INTO conversation_messages (conversation_id, position, id, role, parts)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (conversation_id, position) DO UPDATE
		   SET parts = EXCLUDED.parts, updated_at = now()`,
		conversationID, position, m.ID, m.Role, parts)
	if store.IsUniqueViolation(err, "conversation_messages_id_key") {
		return problem.New(http.StatusConflict, CodeTranscriptMismatch, fmt.Sprintf("message id %q is already used in this conversation", m.ID))
	}
	return store.MapError(err, "message")
}
