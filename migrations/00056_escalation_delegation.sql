-- +goose Up
-- Escalation and delegation (issue 40, docs/approvals.md).
--
-- A rule may name who may decide the calls it governs (deciders: users
-- and/or everyone at or above a role; NULL both: every approver and
-- admin, as before) and whom a request escalates to once it has been
-- pending for a while (more users and/or a role). Escalation only adds
-- deciders; the number of approvals needed never changes with it.
ALTER TABLE approval_policy_rules
    ADD COLUMN deciders_role    text,
    ADD COLUMN deciders_ids     uuid[],
    ADD COLUMN escalate_after_s bigint,
    ADD COLUMN escalate_role    text,
    ADD COLUMN escalate_ids     uuid[],
    ADD CONSTRAINT approval_policy_rules_deciders_role CHECK (deciders_role IN ('approver', 'admin')),
    ADD CONSTRAINT approval_policy_rules_escalate_role CHECK (escalate_role IN ('approver', 'admin')),
    -- An escalation has a delay and someone to add, and adds to a rule
    -- that restricts its deciders (without one, everyone may decide).
    ADD CONSTRAINT approval_policy_rules_escalation CHECK (
        (escalate_after_s IS NULL) = (escalate_role IS NULL AND escalate_ids IS NULL)
        AND (escalate_after_s IS NULL OR (escalate_after_s > 0
            AND (deciders_role IS NOT NULL OR deciders_ids IS NOT NULL))));

-- A request records who may decide it, from the rule it was raised under
-- (a stricter version raising it later changes how many, not who), and
-- when it escalates; escalated_at is set once, by whichever of the
-- scheduled job or a decision finds it due first.
ALTER TABLE approval_requests
    ADD COLUMN deciders_role text,
    ADD COLUMN deciders_ids  uuid[],
    ADD COLUMN escalate_at   timestamptz,
    ADD COLUMN escalate_role text,
    ADD COLUMN escalate_ids  uuid[],
    ADD COLUMN escalated_at  timestamptz,
    ADD CONSTRAINT approval_requests_escalation CHECK (
        (escalate_at IS NULL) = (escalate_role IS NULL AND escalate_ids IS NULL)
        AND (escalated_at IS NULL OR escalate_at IS NOT NULL));
-- The escalation job looks up the pending requests that are due.
CREATE INDEX approval_requests_escalate_idx ON approval_requests (escalate_at)
    WHERE status = 'pending' AND escalated_at IS NULL;

-- An approver hands their approvals to another for a window: from
-- valid_from (inclusive) until valid_until (exclusive), or until the
-- delegator ends it (ended_at). Rows are never deleted: the audit chain
-- and decisions refer to them.
CREATE TABLE approval_delegations (
    id           uuid PRIMARY KEY,
    delegator_id uuid NOT NULL REFERENCES users (id),
    delegate_id  uuid NOT NULL REFERENCES users (id),
    valid_from   timestamptz NOT NULL,
    valid_until  timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    ended_at     timestamptz,
    CONSTRAINT approval_delegations_window CHECK (valid_until > valid_from),
    CONSTRAINT approval_delegations_not_self CHECK (delegator_id <> delegate_id)
);
CREATE INDEX approval_delegations_delegator_idx ON approval_delegations (delegator_id, valid_until);
CREATE INDEX approval_delegations_delegate_idx ON approval_delegations (delegate_id, valid_until);

-- A decision made by a delegate on the strength of a delegation names the
-- delegator whose authority it used.
ALTER TABLE approval_decisions
    ADD COLUMN on_behalf_of uuid REFERENCES users (id),
    ADD CONSTRAINT approval_decisions_on_behalf CHECK (on_behalf_of <> approver_id);

-- +goose Down
ALTER TABLE approval_decisions DROP COLUMN on_behalf_of;
DROP TABLE approval_delegations;
ALTER TABLE approval_requests
    DROP COLUMN escalated_at,
    DROP COLUMN escalate_ids,
    DROP COLUMN escalate_role,
    DROP COLUMN escalate_at,
    DROP COLUMN deciders_ids,
    DROP COLUMN deciders_role;
ALTER TABLE approval_policy_rules
    DROP COLUMN escalate_ids,
    DROP COLUMN escalate_role,
    DROP COLUMN escalate_after_s,
    DROP COLUMN deciders_ids,
    DROP COLUMN deciders_role;
