-- +goose Up
-- A run of a schedule that issues under an allowance says what became of
-- its draft: issued (drawing allowance_id), waiting for the approval
-- approval_id (no allowance in force covered it), or drafted with a note
-- saying why issuing was refused.
ALTER TABLE schedule_runs
    DROP CONSTRAINT schedule_runs_status,
    ADD CONSTRAINT schedule_runs_status CHECK (status IN ('drafted', 'issued', 'waiting', 'failed')),
    ADD COLUMN approval_id uuid,
    ADD COLUMN allowance_id uuid,
    ADD COLUMN note text NOT NULL DEFAULT '';

-- Such a run asks for its approval by the service's own path, for the
-- schedule's creator (capability.PathSystem).
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_via;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_via
    CHECK (requested_via IN ('rest', 'binding', 'mcp', 'system') OR requested_via LIKE 'agent:%');

-- +goose Down
-- Requests a schedule made stay (the audit chain refers to them); NOT
-- VALID keeps them while refusing new ones.
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_via;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_via
    CHECK (requested_via IN ('rest', 'binding', 'mcp') OR requested_via LIKE 'agent:%') NOT VALID;
UPDATE schedule_runs SET status = 'drafted' WHERE status IN ('issued', 'waiting');
ALTER TABLE schedule_runs
    DROP COLUMN note,
    DROP COLUMN allowance_id,
    DROP COLUMN approval_id,
    DROP CONSTRAINT schedule_runs_status,
    ADD CONSTRAINT schedule_runs_status CHECK (status IN ('drafted', 'failed'));
