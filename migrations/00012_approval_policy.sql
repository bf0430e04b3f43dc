-- +goose Up
-- Approval policy as data (issue 14, docs/adr/0014-approval-policy-as-data.md):
-- how many distinct approvers a consequential call needs, per capability and
-- currency, in tiers, owned by admins. Every change is a new policy
-- version; a rule row is never updated but retired (to_version), so the
-- rules in force at any version can be read back.
CREATE TABLE approval_policy_versions (
    version    bigint PRIMARY KEY,
    changed_at timestamptz NOT NULL,
    -- NULL: the seed of this migration.
    changed_by uuid REFERENCES users (id),
    CONSTRAINT approval_policy_versions_positive CHECK (version >= 1)
);

CREATE TABLE approval_policy_rules (
    id               uuid PRIMARY KEY,
    capability       text NOT NULL,
    -- NULL: any currency for which the capability has no rule of its own.
    currency         text,
    -- The threshold. A rule for one currency states it in that currency's
    -- minor units; a rule for any currency in major units of the call's
    -- currency, since a minor unit of one currency is not one of another
    -- (JPY has none, BHD has a thousand). Both at most 2^53 - 1, the
    -- largest amount an invoice holds.
    min_amount       bigint,
    min_amount_major bigint,
    approvers        int NOT NULL,
    from_version     bigint NOT NULL REFERENCES approval_policy_versions (version),
    -- NULL while in force; else the version that replaced or deleted it.
    to_version       bigint REFERENCES approval_policy_versions (version),
    CONSTRAINT approval_policy_rules_capability CHECK (capability ~ '^[a-z][a-z0-9]*(-[a-z0-9]+)*$'),
    CONSTRAINT approval_policy_rules_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT approval_policy_rules_threshold CHECK (CASE WHEN currency IS NULL
        THEN min_amount IS NULL AND min_amount_major IS NOT NULL AND min_amount_major BETWEEN 0 AND 9007199254740991
        ELSE min_amount_major IS NULL AND min_amount IS NOT NULL AND min_amount BETWEEN 0 AND 9007199254740991 END),
    -- As approval_requests_required.
    CONSTRAINT approval_policy_rules_approvers CHECK (approvers BETWEEN 1 AND 10),
    CONSTRAINT approval_policy_rules_versions CHECK (to_version > from_version)
);
-- One tier per capability, currency and threshold in force; the gate reads
-- the tiers of one capability by its prefix.
CREATE UNIQUE INDEX approval_policy_rules_in_force_key ON approval_policy_rules
    (capability, coalesce(currency, '*'), coalesce(min_amount, min_amount_major)) WHERE to_version IS NULL;

-- The seed is the behaviour before policy was data: issuing at or above
-- 10,000 major units of any currency needs two approvers, everything
-- else one. It is as currency-blind as that was (¥10,000 and BHD 10,000
-- alike); docs/approvals.md shows an admin how to state per-currency rules.
INSERT INTO approval_policy_versions (version, changed_at) VALUES (1, now());
INSERT INTO approval_policy_rules (id, capability, currency, min_amount_major, approvers, from_version)
VALUES (gen_random_uuid(), 'issue-invoice', NULL, 10000, 2, 1);

-- A request records the policy version and the tier it was raised under
-- (NULL rule: no tier reached, one approver) and what that tier required.
-- required_approvals is what it needs now: a later, stricter policy raises
-- it (required_raised_version says which); a looser one never lowers it.
-- Requests raised before this migration have no policy columns.
ALTER TABLE approval_requests
    ADD COLUMN policy_version bigint REFERENCES approval_policy_versions (version),
    ADD COLUMN policy_rule_id uuid REFERENCES approval_policy_rules (id),
    ADD COLUMN policy_required int,
    ADD COLUMN required_raised_version bigint REFERENCES approval_policy_versions (version),
    ADD CONSTRAINT approval_requests_policy CHECK ((policy_version IS NULL) = (policy_required IS NULL)),
    ADD CONSTRAINT approval_requests_policy_required CHECK (policy_required <= required_approvals);

-- +goose Down
ALTER TABLE approval_requests
    DROP COLUMN required_raised_version,
    DROP COLUMN policy_required,
    DROP COLUMN policy_rule_id,
    DROP COLUMN policy_version;
DROP TABLE approval_policy_rules;
DROP TABLE approval_policy_versions;
