-- +goose Up
-- An event's hash covers when the database recorded it: without it,
-- recorded_at could be moved (an event made to look older or newer) and
-- every hash would still verify. Rows hashed before this migration keep
-- hash_version 1, SHA-256(prev_hash || event); rows from now on are
-- version 2, SHA-256(prev_hash || event || recorded_at as the 8-byte
-- big-endian count of microseconds since 1970). A row whose version is
-- changed no longer matches its hash, so old rows cannot be used to skip
-- the new coverage.
ALTER TABLE audit_events ADD COLUMN hash_version smallint NOT NULL DEFAULT 1
    CONSTRAINT audit_events_hash_version CHECK (hash_version IN (1, 2));
-- Only existing rows are version 1; audit.AppendTx names the version.
ALTER TABLE audit_events ALTER COLUMN hash_version DROP DEFAULT;

-- +goose Down
-- Version 2 rows do not verify without their version: going down would
-- make the chain look broken, so it is refused once there are any.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM audit_events WHERE hash_version = 2) THEN
        RAISE EXCEPTION 'audit_events holds events hashed with recorded_at (hash_version 2); they would no longer verify without it';
    END IF;
END;
$$;
-- +goose StatementEnd
ALTER TABLE audit_events DROP COLUMN hash_version;
