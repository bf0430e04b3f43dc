-- +goose Up
-- Webhook endpoints (issue 17): where events are pushed, signed per
-- Standard Webhooks. The secret is stored as is (HMAC needs it); during a
-- rotation the previous one signs too until previous_secret_until.
CREATE TABLE webhook_endpoints (
    id                    uuid PRIMARY KEY,
    url                   text NOT NULL,
    events                text[] NOT NULL,
    secret                text NOT NULL,
    previous_secret       text,
    previous_secret_until timestamptz,
    enabled               boolean NOT NULL DEFAULT true,
    disabled_reason       text NOT NULL DEFAULT '',
    created_by            uuid NOT NULL REFERENCES users (id),
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    version               bigint NOT NULL DEFAULT 1,
    CONSTRAINT webhook_endpoints_url_format CHECK (url ~ '^https?://' AND char_length(url) <= 2048),
    CONSTRAINT webhook_endpoints_events_nonempty CHECK (cardinality(events) > 0),
    CONSTRAINT webhook_endpoints_secret_format CHECK (secret LIKE 'whsec\_%'),
    CONSTRAINT webhook_endpoints_previous_secret CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL))
);
CREATE INDEX webhook_endpoints_created_idx ON webhook_endpoints (created_at DESC, id DESC);

-- One delivery per (endpoint, event): the dispatcher may run twice (River
-- is at least once) and must not send an event twice. payload is the exact
-- signed body, kept as text because jsonb would re-serialise it, so every
-- retry and redelivery sends the same bytes.
CREATE TABLE webhook_deliveries (
    id           uuid PRIMARY KEY,
    endpoint_id  uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id     uuid NOT NULL,
    event_type   text NOT NULL,
    payload      text NOT NULL,
    status       text NOT NULL DEFAULT 'pending',
    attempts     int NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    delivered_at timestamptz,
    CONSTRAINT webhook_deliveries_status CHECK (status IN ('pending', 'delivered', 'failed')),
    CONSTRAINT webhook_deliveries_once UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);

-- Every attempt, as the endpoint's owner needs it to debug: when, the
-- status or the error, how long, and the first bytes of the answer.
CREATE TABLE webhook_attempts (
    delivery_id   uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt       int NOT NULL,
    attempted_at  timestamptz NOT NULL,
    status_code   int,
    duration_ms   int NOT NULL,
    response_head text NOT NULL DEFAULT '',
    error         text NOT NULL DEFAULT '',
    PRIMARY KEY (delivery_id, attempt)
);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
