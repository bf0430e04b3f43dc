-- +goose Up
-- Recurring invoices (issue 43, docs/schedules.md): a schedule drafts one
-- invoice per period of its cadence, in the business time zone. every_n
-- with every_unit is the cadence ("1 month", "2 weeks"); day_of_month
-- (NULL: the start's day) is clamped to a short month's last day. Periods
-- start on start, and no later than end_date, and at most count of them.
CREATE TABLE schedules (
    id                 uuid PRIMARY KEY,
    customer_id        uuid NOT NULL REFERENCES customers (id),
    currency           text NOT NULL,
    every_n            int NOT NULL,
    every_unit         text NOT NULL,
    day_of_month       int,
    start_date         date NOT NULL,
    end_date           date,
    count              int,
    -- The legal invoice's line inputs; "{period}" in a description is
    -- the period drafted ("2027-01-31 – 2027-02-27").
    lines              jsonb NOT NULL,
    payment_terms_days int,
    issue              text NOT NULL,
    allowance_id       uuid REFERENCES allowances (id),
    created_by         uuid NOT NULL REFERENCES users (id),
    created_at         timestamptz NOT NULL,
    deleted_at         timestamptz,
    CONSTRAINT schedules_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT schedules_every_n CHECK (every_n BETWEEN 1 AND 366),
    CONSTRAINT schedules_every_unit CHECK (every_unit IN ('day', 'week', 'month', 'year')),
    CONSTRAINT schedules_day_of_month CHECK (day_of_month BETWEEN 1 AND 31),
    CONSTRAINT schedules_end CHECK (end_date IS NULL OR end_date >= start_date),
    CONSTRAINT schedules_count CHECK (count IS NULL OR count >= 1),
    CONSTRAINT schedules_lines CHECK (jsonb_typeof(lines) = 'array'),
    CONSTRAINT schedules_terms CHECK (payment_terms_days BETWEEN 0 AND 365),
    CONSTRAINT schedules_issue CHECK (issue IN ('never', 'under_allowance')),
    CONSTRAINT schedules_allowance CHECK ((issue = 'under_allowance') = (allowance_id IS NOT NULL))
);
-- The list, newest first (keyset on id, a UUIDv7); the job reads live ones.
CREATE INDEX schedules_created_idx ON schedules (created_at DESC, id DESC);
CREATE INDEX schedules_live_idx ON schedules (id) WHERE deleted_at IS NULL;

-- One row per (schedule, period) ever run: the unique key is what keeps
-- two replicas, a restart or a catch-up from drafting a period twice.
CREATE TABLE schedule_runs (
    id           uuid PRIMARY KEY,
    schedule_id  uuid NOT NULL REFERENCES schedules (id),
    period_start date NOT NULL,
    period_end   date NOT NULL,
    invoice_id   uuid REFERENCES invoices (id) ON DELETE SET NULL,
    status       text NOT NULL,
    error        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    CONSTRAINT schedule_runs_period UNIQUE (schedule_id, period_start),
    CONSTRAINT schedule_runs_status CHECK (status IN ('drafted', 'failed')),
    CONSTRAINT schedule_runs_failed CHECK ((status = 'failed') = (error <> ''))
);

-- +goose Down
DROP TABLE schedule_runs;
DROP TABLE schedules;
