-- +goose Up
-- A schedule may be changed (PATCH /v1/schedules/{id}): version is its
-- ETag, as a customer's is.
ALTER TABLE schedules
    ADD COLUMN version bigint NOT NULL DEFAULT 1,
    ADD COLUMN updated_at timestamptz;
UPDATE schedules SET updated_at = created_at;
ALTER TABLE schedules ALTER COLUMN updated_at SET NOT NULL;

-- A run records whether its schedule issued when it drafted: a schedule
-- switched to under_allowance issues the periods it drafts from then on,
-- never drafts it left for a person before.
ALTER TABLE schedule_runs ADD COLUMN issue text NOT NULL DEFAULT 'never'
    CONSTRAINT schedule_runs_issue CHECK (issue IN ('never', 'under_allowance'));
UPDATE schedule_runs r SET issue = s.issue FROM schedules s WHERE s.id = r.schedule_id;
ALTER TABLE schedule_runs ALTER COLUMN issue DROP DEFAULT;

-- The billing run's second step reads every run still to issue, across
-- schedules, at each pass: drafted ones of schedules that issue, and
-- waiting ones (whose approval may have been decided).
CREATE INDEX schedule_runs_to_issue_idx ON schedule_runs (period_start)
    WHERE (status = 'drafted' AND issue = 'under_allowance' AND note = '') OR status = 'waiting';

-- +goose Down
DROP INDEX schedule_runs_to_issue_idx;
ALTER TABLE schedule_runs DROP COLUMN issue;
ALTER TABLE schedules DROP COLUMN updated_at, DROP COLUMN version;
