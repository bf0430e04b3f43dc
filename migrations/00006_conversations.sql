-- +goose Up
-- Conversations of the step loop (ADR-0002). The server's copy of the
-- transcript is authoritative: clients' message lists are reconciled
-- against these rows. The id is the client's chat id (the AI SDK generates
-- it), so it is text; it belongs to the principal that opened it.
CREATE TABLE conversations (
    id         text PRIMARY KEY,
    owner_id   uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- busy_token/busy_until is a lease held while a request runs the loop:
    -- a second request is refused with CONVERSATION_BUSY instead of holding
    -- a database connection (and a row lock) for a whole model stream. The
    -- expiry frees a conversation whose replica died mid-request.
    busy_token uuid,
    busy_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT conversations_id_format CHECK (id ~ '^[A-Za-z0-9_-]{1,128}$')
);
CREATE INDEX conversations_owner_idx ON conversations (owner_id, updated_at DESC);

-- One row per UIMessage, in order. parts is the AI SDK UIMessage parts
-- array plus server-only members (what the model read for a tool call),
-- which the API strips.
CREATE TABLE conversation_messages (
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position        integer NOT NULL,
    id              text NOT NULL,
    role            text NOT NULL CHECK (role IN ('user', 'assistant')),
    parts           jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, position),
    CONSTRAINT conversation_messages_id_key UNIQUE (conversation_id, id),
    CONSTRAINT conversation_messages_parts_array CHECK (jsonb_typeof(parts) = 'array')
);

-- +goose Down
DROP TABLE conversation_messages;
DROP TABLE conversations;
