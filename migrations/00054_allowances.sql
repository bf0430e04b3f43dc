-- +goose Up
-- Standing allowances (issue 40, docs/approvals.md "Standing allowances"):
-- a budget an approved grant-allowance call puts in force, which calls of
-- one kind (issue, credit, void, payments) in one currency, for some
-- customers or all, draw down in their own transaction instead of asking
-- for an approval each. remaining_* are what is left; a draw is one UPDATE
-- under the row lock, and the checks below are the backstop against
-- overdraw. Draws are in the audit chain (allowance.drawn).
CREATE TABLE allowances (
    id              uuid PRIMARY KEY,
    kind            text NOT NULL,
    -- NULL: every customer.
    customer_ids    uuid[],
    currency        text NOT NULL,
    max_total       bigint NOT NULL,
    max_count       int NOT NULL,
    remaining_total bigint NOT NULL,
    remaining_count int NOT NULL,
    valid_until     timestamptz NOT NULL,
    reason          text NOT NULL,
    requested_by    uuid NOT NULL REFERENCES users (id),
    -- The approval its grant consumed, and who decided it: a decider
    -- never draws what they approved (the effect would rest on their own
    -- decision, as the gate refuses for an approval).
    approval_id     uuid NOT NULL UNIQUE REFERENCES approval_requests (id),
    deciders        uuid[] NOT NULL,
    created_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    revoked_by      uuid REFERENCES users (id),
    revoke_reason   text NOT NULL DEFAULT '',
    version         bigint NOT NULL DEFAULT 1,
    CONSTRAINT allowances_kind CHECK (kind IN ('issue', 'credit', 'void', 'payments')),
    CONSTRAINT allowances_customers CHECK (customer_ids IS NULL OR cardinality(customer_ids) BETWEEN 1 AND 100),
    CONSTRAINT allowances_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT allowances_max_total CHECK (max_total BETWEEN 1 AND 9007199254740991),
    CONSTRAINT allowances_max_count CHECK (max_count BETWEEN 1 AND 100000),
    CONSTRAINT allowances_remaining_total CHECK (remaining_total BETWEEN 0 AND max_total),
    CONSTRAINT allowances_remaining_count CHECK (remaining_count BETWEEN 0 AND max_count),
    CONSTRAINT allowances_validity CHECK (valid_until > created_at),
    CONSTRAINT allowances_reason_len CHECK (octet_length(reason) BETWEEN 1 AND 2000),
    CONSTRAINT allowances_revoked CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
-- A draw looks for the in-force allowance of its kind and currency that
-- expires first.
CREATE INDEX allowances_drawable_idx ON allowances (kind, currency, valid_until, id)
    WHERE revoked_at IS NULL AND remaining_count > 0;
-- The list, newest first (keyset on id, a UUIDv7).
CREATE INDEX allowances_created_idx ON allowances (created_at DESC, id DESC);

-- An effect a draw let through names the allowance, as one an approval
-- let through names the approval (ADR-0022 §3): windows count both.
ALTER TABLE policy_effects ADD COLUMN allowance_id uuid REFERENCES allowances (id);

-- +goose Down
ALTER TABLE policy_effects DROP COLUMN allowance_id;
DROP TABLE allowances;
