-- +goose Up
-- The append-only audit chain (issue 4). Each row's hash is SHA-256 over
-- the previous row's hash and the RFC 8785 canonical JSON of its event, so
-- an edited, removed or reordered row breaks every hash after it.
CREATE TABLE audit_events (
    seq          bigint PRIMARY KEY,
    event        jsonb NOT NULL,
    prev_hash    bytea NOT NULL,
    hash         bytea NOT NULL,
    -- Query columns derived from the event, so they cannot disagree with it.
    type         text GENERATED ALWAYS AS (event->>'type') STORED,
    subject_type text GENERATED ALWAYS AS (event->>'subject_type') STORED,
    subject_id   text GENERATED ALWAYS AS (event->>'subject_id') STORED,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT audit_events_hash_len CHECK (octet_length(hash) = 32 AND octet_length(prev_hash) = 32)
);
CREATE INDEX audit_events_subject_idx ON audit_events (subject_type, subject_id, seq);

-- +goose StatementBegin
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER audit_events_no_update_delete BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();

-- +goose Down
DROP TABLE audit_events;
DROP FUNCTION audit_events_append_only();
