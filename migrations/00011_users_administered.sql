-- +goose Up
-- Users administered (issue 14): an optional email address per user, and
-- approval decisions that stop counting when their approver loses the
-- authority to decide (docs/adr/0012-approvals-bound-to-live-authority.md).

-- One address, one account, compared case-insensitively: the address is
-- where notifications about approvals go and, later, where a reset link
-- would, so two accounts sharing it would let one mailbox act as both.
ALTER TABLE users ADD COLUMN email text;
ALTER TABLE users ADD CONSTRAINT users_email_format
    CHECK (email IS NULL OR (octet_length(email) <= 254 AND email ~ '^[^@\s]+@[^@\s]+$'));
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
-- The admin list pages by the API's one (created_at, id) keyset.
CREATE INDEX users_created_idx ON users (created_at, id);

-- A voided decision is kept, with when and why, so the request shows what
-- no longer counts; it never counts again, and its approver, once entitled
-- again, may decide anew: one live decision per approver and request.
ALTER TABLE approval_decisions ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE approval_decisions DROP CONSTRAINT approval_decisions_pkey;
ALTER TABLE approval_decisions ADD PRIMARY KEY (id);
ALTER TABLE approval_decisions ADD COLUMN voided_at timestamptz;
ALTER TABLE approval_decisions ADD COLUMN void_reason text;
CREATE UNIQUE INDEX approval_decisions_live_key ON approval_decisions (request_id, approver_id)
    WHERE voided_at IS NULL;
ALTER TABLE approval_decisions ADD CONSTRAINT approval_decisions_void
    CHECK ((voided_at IS NULL) = (void_reason IS NULL)
           AND (void_reason IS NULL OR void_reason IN ('approver_disabled', 'approver_demoted')));

-- +goose Down
-- Voided decisions cannot be told apart without the columns that mark
-- them, and kept they would count again: they go (the audit chain keeps
-- the record of each).
DELETE FROM approval_decisions WHERE voided_at IS NOT NULL;
ALTER TABLE approval_decisions DROP CONSTRAINT approval_decisions_void;
DROP INDEX approval_decisions_live_key;
ALTER TABLE approval_decisions DROP COLUMN void_reason;
ALTER TABLE approval_decisions DROP COLUMN voided_at;
ALTER TABLE approval_decisions DROP CONSTRAINT approval_decisions_pkey;
ALTER TABLE approval_decisions DROP COLUMN id;
ALTER TABLE approval_decisions ADD PRIMARY KEY (request_id, approver_id);
DROP INDEX users_created_idx;
DROP INDEX users_email_key;
ALTER TABLE users DROP COLUMN email;
