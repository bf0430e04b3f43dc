-- +goose Up
-- invoiced as the OAuth 2.1 authorization server of its /mcp resource
-- (ADR-0023). A client is registered (RFC 7591: id 'ioc_…') or names
-- the https URL of its metadata document as its id (a Client ID
-- Metadata Document, fetched and kept here for an hour).
CREATE TABLE oauth_clients (
    id                text PRIMARY KEY,
    name              text NOT NULL,
    redirect_uris     text[] NOT NULL,
    metadata_document boolean NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    fetched_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT oauth_clients_redirect_uris CHECK (cardinality(redirect_uris) BETWEEN 1 AND 10)
);

-- A grant is what a user approved for a client: a row among the user's
-- API tokens (listed and revoked with them), which no bearer token hashes
-- to. Its access and refresh tokens are rows of oauth_tokens.
ALTER TABLE api_tokens ALTER COLUMN token_sha256 DROP NOT NULL;
ALTER TABLE api_tokens ADD COLUMN oauth_client_id text REFERENCES oauth_clients (id) ON DELETE CASCADE;
ALTER TABLE api_tokens ADD COLUMN scope text;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_kind CHECK (
    (token_sha256 IS NOT NULL AND oauth_client_id IS NULL AND scope IS NULL)
    OR (token_sha256 IS NULL AND oauth_client_id IS NOT NULL AND scope IN ('read', 'read write')));

-- One authorization request, from /oauth/authorize to its code's single
-- exchange. user_id and scope are set by the user's consent, code_sha256
-- with them; consumed_at by the exchange.
CREATE TABLE oauth_authorizations (
    id             uuid PRIMARY KEY,
    client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    state          text NOT NULL,
    requested      text NOT NULL,
    code_challenge text NOT NULL,
    resource       text NOT NULL,
    user_id        uuid REFERENCES users (id) ON DELETE CASCADE,
    scope          text,
    code_sha256    bytea,
    grant_id       uuid REFERENCES api_tokens (id) ON DELETE CASCADE,
    consumed_at    timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    CONSTRAINT oauth_authorizations_code_key UNIQUE (code_sha256),
    CONSTRAINT oauth_authorizations_scope CHECK (scope IN ('read', 'read write')),
    CONSTRAINT oauth_authorizations_consent CHECK ((user_id IS NULL) = (scope IS NULL) AND (user_id IS NULL) = (code_sha256 IS NULL))
);
CREATE INDEX oauth_authorizations_expires_idx ON oauth_authorizations (expires_at);

-- Access and refresh tokens, by SHA-256 as API tokens are. A refresh
-- token is used once (used_at); a second use revokes its grant.
CREATE TABLE oauth_tokens (
    token_sha256 bytea PRIMARY KEY,
    grant_id     uuid NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    refresh      boolean NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT oauth_tokens_sha256_len CHECK (octet_length(token_sha256) = 32),
    CONSTRAINT oauth_tokens_used CHECK (refresh OR used_at IS NULL)
);
CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expires_idx ON oauth_tokens (expires_at);

-- +goose Down
DROP TABLE oauth_tokens;
DROP TABLE oauth_authorizations;
DELETE FROM api_tokens WHERE oauth_client_id IS NOT NULL;
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_kind;
ALTER TABLE api_tokens DROP COLUMN scope;
ALTER TABLE api_tokens DROP COLUMN oauth_client_id;
ALTER TABLE api_tokens ALTER COLUMN token_sha256 SET NOT NULL;
DROP TABLE oauth_clients;
