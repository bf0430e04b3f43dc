-- +goose Up
-- Web inbox sessions (issue 7). The session id lives only in the browser's
-- cookie; the table keeps its SHA-256, so a read of this table cannot sign
-- anyone in. expires_at is the absolute limit; last_seen_at drives the idle
-- limit. csrf_token is the synchronizer token the session's forms carry.
CREATE TABLE web_sessions (
    id_sha256    bytea PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    CONSTRAINT web_sessions_sha256_len CHECK (octet_length(id_sha256) = 32)
);
CREATE INDEX web_sessions_user_id_idx ON web_sessions (user_id);
CREATE INDEX web_sessions_expires_at_idx ON web_sessions (expires_at);

-- Sign-in attempts per key ("user:<name>", "ip:<address>") in a fixed
-- window. An attempt is counted before the password is checked, in one
-- upsert, so concurrent guesses cannot slip past the limit.
CREATE TABLE web_login_throttle (
    key          text PRIMARY KEY,
    window_start timestamptz NOT NULL,
    attempts     integer NOT NULL CHECK (attempts >= 0)
);

-- +goose Down
DROP TABLE web_login_throttle;
DROP TABLE web_sessions;
