package steploop

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
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
	// stale is a run of the conversation that never ended: its replica
	// died, and its lease expired before this one was taken (uuid.Nil:
	// none).
	stale uuid.UUID
}

// owner is whom a statement opens a conversation for: a known user, or
// the holder of a bearer token the statement authenticates as it writes
// (identity.Caller). For a token, the statement sets holder when the
// token authenticates, whether or not it opened the conversation; when it
// does not, the statement writes nothing and fails with errNoHolder.
type owner struct {
	id     *uuid.UUID
	sha256 []byte
	roles  []string
	holder *identity.Holder
}

func ownerID(id uuid.UUID) owner { return owner{id: &id} }

// ownerOf is the caller as an owner.
func ownerOf(who *identity.Caller) owner {
	if p, ok := who.Known(); ok {
		return ownerID(p.UserID)
	}
	sum, roles, _ := who.Bearer()
	return owner{sha256: sum, roles: roles}
}

// ownerCTE is the WITH entries that name the owner of a statement that
// opens a conversation, as who(id, username, role): the known user id in
// parameter idParam (username and role NULL), or the holder of the bearer
// token in hashParam, among the roles in rolesParam (identity).
func ownerCTE(idParam, hashParam, rolesParam int) string {
	return identity.TokenHolderCTE("bearer", hashParam, rolesParam) + fmt.Sprintf(`, who AS (
			SELECT $%[1]d::uuid AS id, NULL::text AS username, NULL::text AS role WHERE $%[1]d::uuid IS NOT NULL
			UNION ALL
			SELECT holder_id, holder_username, holder_role FROM bearer
		)`, idParam)
}

// authenticated notes the holder a statement for o read from its who
// row (a known owner has none).
func (o *owner) authenticated(id uuid.UUID, username, role *string) {
	if o.sha256 != nil && username != nil && role != nil {
		o.holder = &identity.Holder{ID: id, Username: *username, Role: identity.Role(*role)}
	}
}

var (
	// errNoHolder: the bearer token of a statement's owner did not
	// authenticate, and the statement did nothing.
	errNoHolder = errors.New("steploop: the bearer token has no holder")
	// errNotAcquired: the statement taking a lease found no conversation
	// it could take; notAcquired tells the caller why.
	errNotAcquired = errors.New("steploop: conversation not acquired")
)

// notAcquired is why owner could not take conversation id's lease:
// another owner's conversation is 404, indistinguishable from none; a
// conversation whose lease is held is 409 CONVERSATION_BUSY.
func notAcquired(ctx context.Context, db store.Executor, id string, owner uuid.UUID) error {
	var other uuid.UUID
	err := db.QueryRow(ctx, `SELECT owner_id FROM conversations WHERE id = $1`, id).Scan(&other)
	if err != nil || other != owner {
		return problem.NotFound("conversation")
	}
	return problem.Conflict(CodeConversationBusy, "another request is running this conversation; retry when it has finished")
}

// ConversationAcquire opens the conversation id for owner, creating it when
// new (xmax = 0 tells a fresh insert from an update), and takes its busy
// lease for ttl. Another owner's conversation is
// 404 (indistinguishable from none); a conversation whose lease is held is
// 409 CONVERSATION_BUSY. One statement decides, so of two concurrent
// requests exactly one gets the lease. The same statement names a run of
// the conversation left unended (Lease.stale), which the caller reaps
// before it goes on.
func ConversationAcquire(ctx context.Context, db store.Executor, id string, owner uuid.UUID, ttl time.Duration) (*Lease, error) {
	o := ownerID(owner)
	l, _, err := acquire(ctx, db, id, &o, ttl, false)
	if errors.Is(err, errNotAcquired) {
		return nil, notAcquired(ctx, db, id, owner)
	}
	return l, err
}

// lastStored is a conversation's last message, as the statement taking
// its lease read it: pos -1 when it has none; end is what every message
// adds to the model's context.
type lastStored struct {
	msg *Message
	pos int
	end int64
}

// conversationAcquireSQL is acquire's statement, joined once rather than
// for every chat.
var conversationAcquireSQL = `
		WITH async AS (
			SELECT set_config('synchronous_commit', coalesce($5::text, current_setting('synchronous_commit')), true)
		), ` + ownerCTE(2, 6, 7) + `, c AS (
			INSERT INTO conversations (id, owner_id, busy_token, busy_until)
			SELECT $1, who.id, $3, now() + $4::interval FROM async, who
			ON CONFLICT (id) DO UPDATE
			   SET busy_token = EXCLUDED.busy_token, busy_until = EXCLUDED.busy_until, updated_at = now()
			 WHERE conversations.owner_id = EXCLUDED.owner_id
			   AND (conversations.busy_until IS NULL OR conversations.busy_until < now())
			RETURNING id, owner_id, created_at, updated_at, xmax = 0 AS created
		), last AS (
			SELECT position, chars_before + model_chars AS end_chars, id, role, parts, metadata FROM conversation_messages
			 WHERE conversation_id = $1 ORDER BY position DESC LIMIT 1
		)
		SELECT who.id, who.username, who.role, c.id, c.owner_id, c.created_at, c.updated_at, c.created,
		       (SELECT r.id FROM chat_runs r WHERE r.conversation_id = c.id AND r.ended_at IS NULL
		         ORDER BY r.started_at DESC LIMIT 1),
		       last.position, last.end_chars, coalesce(last.id, ''), coalesce(last.role, ''), last.parts, last.metadata
		  FROM who LEFT JOIN c ON true LEFT JOIN last ON true`

// acquire is ConversationAcquire that also reads the conversation's last
// message; with async, its commit does not wait for the disk (see
// ConversationCreateWithMessage: outside a transaction only). It fails
// with errNotAcquired instead of telling why.
func acquire(ctx context.Context, db store.Executor, id string, o *owner, ttl time.Duration, async bool) (*Lease, lastStored, error) {
	last := lastStored{pos: -1}
	if !idRE.MatchString(id) {
		return nil, last, problem.Invalid("id", "must be 1–128 letters, digits, '_' or '-'")
	}
	var off *string
	if async {
		o := "off"
		off = &o
	}
	token := uuid.New()
	var (
		l               Lease
		who             uuid.UUID
		username, role  *string
		cid             *string
		cowner          *uuid.UUID
		cat, uat        *time.Time
		created         *bool
		stale           *uuid.UUID
		pos             *int
		end             *int64
		m               Message
		parts, metadata []byte
	)
	err := db.QueryRow(ctx, conversationAcquireSQL,
		id, o.id, token, interval(ttl), off, o.sha256, o.roles,
	).Scan(&who, &username, &role, &cid, &cowner, &cat, &uat, &created, &stale, &pos, &end, &m.ID, &m.Role, &parts, &metadata)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, last, errNoHolder
	}
	if err != nil {
		return nil, last, store.MapError(err, "conversation")
	}
	o.authenticated(who, username, role)
	if cid == nil {
		return nil, last, errNotAcquired
	}
	l.ID, l.OwnerID, l.CreatedAt, l.UpdatedAt, l.created, l.token = *cid, *cowner, *cat, *uat, *created, token
	if stale != nil {
		l.stale = *stale
	}
	if pos != nil {
		if err := m.decode(parts, metadata); err != nil {
			return nil, last, err
		}
		last = lastStored{msg: &m, pos: *pos, end: *end}
	}
	return &l, last, nil
}

// interval is d as a PostgreSQL interval.
func interval(d time.Duration) string { return fmt.Sprintf("%d milliseconds", d.Milliseconds()) }

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
	o := ownerID(owner)
	return conversationCreate(ctx, db, id, &o, ttl, m, nil)
}

// conversationCreateSQL is conversationCreate's statement, joined once
// rather than for every chat.
var conversationCreateSQL = `
		WITH async AS (
			SELECT set_config('synchronous_commit', coalesce($8::text, current_setting('synchronous_commit')), true)
		), ` + ownerCTE(2, 13, 14) + `, c AS (
			INSERT INTO conversations (id, owner_id, busy_token, busy_until)
			SELECT $1, who.id, $3, now() + $4::interval FROM async, who
			ON CONFLICT (id) DO NOTHING
			RETURNING id, owner_id, created_at, updated_at
		), m AS (
			INSERT INTO conversation_messages (conversation_id, position, id, role, parts, model_chars)
			SELECT id, 0, $5, $6, $7, $12 FROM c
		), r AS (
			INSERT INTO chat_runs (id, conversation_id, message_id, position, lease_token, head)
			SELECT $9::uuid, id, $10, 1, $3, $11 FROM c WHERE $9::uuid IS NOT NULL
		)
		SELECT who.id, who.username, who.role, c.id, c.owner_id, c.created_at, c.updated_at FROM who LEFT JOIN c ON true`

// conversationCreate is ConversationCreateWithMessage that also opens run
// (when not nil) in the same statement, so a reader that asks right after
// the request began finds it.
func conversationCreate(ctx context.Context, db store.Executor, id string, o *owner, ttl time.Duration, m Message, run *runStart) (*Lease, bool, error) {
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
	var (
		runID, msgID   *string
		head           []byte
		who            uuid.UUID
		username, role *string
		cid            *string
		cowner         *uuid.UUID
		cat, uat       *time.Time
	)
	if run != nil {
		rid := run.ID.String()
		runID, msgID, head = &rid, &run.MessageID, run.Head
	}
	err = db.QueryRow(ctx, conversationCreateSQL,
		id, o.id, l.token, interval(ttl), m.ID, m.Role, parts, async, runID, msgID, string(head), modelChars(m), o.sha256, o.roles,
	).Scan(&who, &username, &role, &cid, &cowner, &cat, &uat)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, errNoHolder
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
	o.authenticated(who, username, role)
	if cid == nil {
		return nil, false, nil
	}
	l.ID, l.OwnerID, l.CreatedAt, l.UpdatedAt = *cid, *cowner, *cat, *uat
	return &l, true, nil
}
