-- +goose Up
-- Frontend confirmations (ADR-0005): protocol state with a short TTL, swept,
-- not decisions. Single use across replicas comes from consuming with one
-- UPDATE … WHERE used_at IS NULL.
CREATE TABLE confirmations (
    -- 32 random bytes, base64url without padding.
    id              text PRIMARY KEY,
    capability      text NOT NULL,
    input_hash      text NOT NULL,
    conversation_id text NOT NULL,
    principal_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tool_call_id    text NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    decision        text,
    decision_reason text,
    used_at         timestamptz,
    CONSTRAINT confirmations_id_format CHECK (id ~ '^[A-Za-z0-9_-]{43}$'),
    CONSTRAINT confirmations_input_hash_format CHECK (input_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT confirmations_expiry CHECK (expires_at > created_at),
    CONSTRAINT confirmations_decision CHECK (decision IN ('approved', 'denied')),
    -- Decided and used happen together, in the one consuming UPDATE.
    CONSTRAINT confirmations_decided_when_used CHECK ((decision IS NULL) = (used_at IS NULL)),
    CONSTRAINT confirmations_reason_len CHECK (octet_length(decision_reason) <= 1000)
);
-- The sweep deletes by expiry.
CREATE INDEX confirmations_expires_at_idx ON confirmations (expires_at);
-- The foreign key's cascade on user deletion.
CREATE INDEX confirmations_principal_id_idx ON confirmations (principal_id);

-- +goose Down
DROP TABLE confirmations;
