-- +goose Up
-- Durable approvals (ADR-0010, issue 4). A request binds one consequential
-- call (capability, effective-input hash, target id and version) to the
-- snapshot of the target the approver decides on. Decisions are one row per
-- approver, so the same approver twice counts once toward a quorum.
CREATE TABLE approval_requests (
    id                 uuid PRIMARY KEY,
    capability         text NOT NULL,
    input_hash         text NOT NULL,
    input              jsonb NOT NULL,
    target_type        text NOT NULL,
    target_id          text NOT NULL,
    target_version     bigint NOT NULL,
    amount             bigint NOT NULL,
    currency           text NOT NULL,
    snapshot           jsonb NOT NULL,
    status             text NOT NULL DEFAULT 'pending',
    requested_by       uuid NOT NULL REFERENCES users (id),
    requested_via      text NOT NULL,
    reason             text NOT NULL DEFAULT '',
    required_approvals int NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    -- While pending: when the request lapses; once approved: when the
    -- unused approval lapses.
    expires_at         timestamptz NOT NULL,
    decided_at         timestamptz,
    consumed_at        timestamptz,
    consumed_by        uuid,
    -- Set when a caller of the gate has been told APPROVAL_EXPIRED, so the
    -- next call requests anew instead of repeating the answer.
    expiry_reported_at timestamptz,
    version            bigint NOT NULL DEFAULT 1,
    CONSTRAINT approval_requests_status CHECK (status IN
        ('pending', 'approved', 'denied', 'expired', 'cancelled', 'superseded', 'consumed')),
    CONSTRAINT approval_requests_input_hash_format CHECK (input_hash ~ '^[0-9a-f]{64}$'),
    CONSTRAINT approval_requests_required CHECK (required_approvals BETWEEN 1 AND 10),
    CONSTRAINT approval_requests_via CHECK (requested_via IN ('rest', 'binding') OR requested_via LIKE 'agent:%'),
    CONSTRAINT approval_requests_reason_len CHECK (octet_length(reason) <= 2000),
    CONSTRAINT approval_requests_currency CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT approval_requests_expiry CHECK (expires_at > created_at),
    -- Consumed exactly when it records by whom and when.
    CONSTRAINT approval_requests_consumed CHECK (
        (status = 'consumed') = (consumed_at IS NOT NULL AND consumed_by IS NOT NULL))
);
-- At most one open request per binding: the gate runs under the caller's
-- lock on the target, and this is the backstop if a caller forgets it.
CREATE UNIQUE INDEX approval_requests_open_binding_key ON approval_requests
    (capability, target_type, target_id, target_version, input_hash)
    WHERE status IN ('pending', 'approved');
-- The gate looks up the latest request of a binding across versions.
CREATE INDEX approval_requests_binding_idx ON approval_requests
    (capability, target_type, target_id, input_hash, created_at DESC);
-- The inbox lists by status, newest first (keyset on id, a UUIDv7).
CREATE INDEX approval_requests_status_idx ON approval_requests (status, id DESC);
-- The expiry sweep.
CREATE INDEX approval_requests_expires_idx ON approval_requests (expires_at)
    WHERE status IN ('pending', 'approved');
CREATE INDEX approval_requests_requested_by_idx ON approval_requests (requested_by);

CREATE TABLE approval_decisions (
    request_id  uuid NOT NULL REFERENCES approval_requests (id) ON DELETE CASCADE,
    approver_id uuid NOT NULL REFERENCES users (id),
    decision    text NOT NULL,
    reason      text NOT NULL DEFAULT '',
    decided_at  timestamptz NOT NULL,
    PRIMARY KEY (request_id, approver_id),
    CONSTRAINT approval_decisions_decision CHECK (decision IN ('approve', 'deny')),
    CONSTRAINT approval_decisions_reason_len CHECK (octet_length(reason) <= 2000),
    CONSTRAINT approval_decisions_deny_reason CHECK (decision <> 'deny' OR reason <> '')
);
CREATE INDEX approval_decisions_approver_idx ON approval_decisions (approver_id);

-- +goose Down
DROP TABLE approval_decisions;
DROP TABLE approval_requests;
