-- +goose Up
-- Users and their API tokens (DESIGN.md §7). Tokens are stored as the
-- SHA-256 of the token; the token itself is shown once and never stored.
CREATE TABLE users (
    id            uuid PRIMARY KEY,
    username      text NOT NULL,
    display_name  text NOT NULL DEFAULT '',
    role          text NOT NULL CHECK (role IN ('clerk', 'approver', 'admin')),
    disabled      boolean NOT NULL DEFAULT false,
    password_hash text,
    version       bigint NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_username_key UNIQUE (username),
    CONSTRAINT users_username_format CHECK (username ~ '^[a-z0-9][a-z0-9._-]{0,62}$')
);

CREATE TABLE api_tokens (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_sha256 bytea NOT NULL,
    name         text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CONSTRAINT api_tokens_sha256_key UNIQUE (token_sha256),
    CONSTRAINT api_tokens_sha256_len CHECK (octet_length(token_sha256) = 32)
);
CREATE INDEX api_tokens_user_id_idx ON api_tokens (user_id);

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE users;
