-- +goose Up
-- The policy governs every governed write capability, over time too
-- (issue 40, docs/adr/0022-the-policy-model-and-its-order.md).
--
-- A tier may ask no approver (a governed bound capability: a currency's
-- own tiers can exempt it from the any-currency ones; the service refuses
-- 0 for a consequential capability, and the gate never lets one through
-- with fewer than one), and may carry a window: the amount it compares is
-- the sum of the capability's effects in the scope over the last
-- window_days days, plus the call's.
ALTER TABLE approval_policy_rules
    DROP CONSTRAINT approval_policy_rules_approvers,
    ADD CONSTRAINT approval_policy_rules_approvers CHECK (approvers BETWEEN 0 AND 10),
    ADD COLUMN window_days int,
    ADD COLUMN scope text,
    ADD CONSTRAINT approval_policy_rules_window CHECK ((window_days IS NULL) = (scope IS NULL)),
    ADD CONSTRAINT approval_policy_rules_window_days CHECK (window_days BETWEEN 1 AND 366),
    ADD CONSTRAINT approval_policy_rules_scope CHECK (scope IN ('requester', 'customer', 'requester_customer'));
-- A windowed tier is another tier than the plain one at the same threshold.
DROP INDEX approval_policy_rules_in_force_key;
CREATE UNIQUE INDEX approval_policy_rules_in_force_key ON approval_policy_rules
    (capability, coalesce(currency, '*'), coalesce(min_amount, min_amount_major), coalesce(window_days, 0), coalesce(scope, ''))
    WHERE to_version IS NULL;

-- What the windowed tiers counted for a request, for its approvers: a
-- JSON array of {window_days, scope, since, currency, sum, count, amount,
-- targets}; NULL when the capability has no windowed tier.
ALTER TABLE approval_requests ADD COLUMN policy_window jsonb;

-- Every call the gate let through, written in the effect's transaction
-- (a rolled-back effect leaves none): what the windows add up. Calls
-- before this migration are not here, so windows start empty.
CREATE TABLE policy_effects (
    id          uuid PRIMARY KEY,
    capability  text NOT NULL,
    requester   uuid NOT NULL REFERENCES users (id),
    -- NULL: the effect concerns no customer.
    customer_id uuid,
    -- Its magnitude, in minor units of currency: a credit moves as much
    -- money as a charge.
    amount      bigint NOT NULL CHECK (amount >= 0),
    currency    text NOT NULL,
    at          timestamptz NOT NULL,
    target_type text NOT NULL,
    target_id   text NOT NULL,
    -- The approval spent; NULL when none was needed.
    approval_id uuid REFERENCES approval_requests (id)
);
-- The two scopes' sums: by customer, by requester (both: either index,
-- then the other column).
CREATE INDEX policy_effects_customer_idx ON policy_effects (capability, currency, customer_id, at);
CREATE INDEX policy_effects_requester_idx ON policy_effects (capability, currency, requester, at);

-- Payments clear a receivable as a credit note does: at or above 10,000
-- major units of any currency (where a credit note asks two) they ask one
-- approver, a rule admins can tighten. Like migration 00030's credit-note
-- tier, it joins the version in force: nothing asked less of a payment
-- before, since no rule could name one.
INSERT INTO approval_policy_rules (id, capability, currency, min_amount_major, approvers, from_version)
SELECT gen_random_uuid(), c, NULL, 10000, 1, (SELECT max(version) FROM approval_policy_versions)
FROM unnest(ARRAY['record-payment', 'mark-invoice-paid']) AS c;

-- +goose Down
-- Going down forgets the tiers the older schema cannot state (no
-- approver, a window) and those of capabilities it did not govern; the
-- requests raised under them keep their counts but lose the tier's id.
UPDATE approval_requests SET policy_rule_id = NULL WHERE policy_rule_id IN (
    SELECT id FROM approval_policy_rules
    WHERE approvers = 0 OR window_days IS NOT NULL
       OR capability NOT IN ('issue-invoice', 'delete-invoice', 'issue-credit-note'));
DELETE FROM approval_policy_rules
WHERE approvers = 0 OR window_days IS NOT NULL
   OR capability NOT IN ('issue-invoice', 'delete-invoice', 'issue-credit-note');
DROP TABLE policy_effects;
ALTER TABLE approval_requests DROP COLUMN policy_window;
DROP INDEX approval_policy_rules_in_force_key;
ALTER TABLE approval_policy_rules
    DROP CONSTRAINT approval_policy_rules_approvers,
    DROP COLUMN window_days,
    DROP COLUMN scope,
    ADD CONSTRAINT approval_policy_rules_approvers CHECK (approvers BETWEEN 1 AND 10);
CREATE UNIQUE INDEX approval_policy_rules_in_force_key ON approval_policy_rules
    (capability, coalesce(currency, '*'), coalesce(min_amount, min_amount_major)) WHERE to_version IS NULL;
