-- +goose Up
-- One-time sign-in links: `make run` prints one for the first admin, and
-- `invoiced users signin-link` one for any user; it opens the page that
-- sets their password and signs them in. As with sessions and API
-- tokens, only the SHA-256 of the link's secret is stored, so a read of
-- this table cannot sign anyone in. Using a link deletes its row, so two
-- uses at once make one session; expires_at is 15 minutes after
-- created_at.
CREATE TABLE signin_links (
    id_sha256  bytea PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    CONSTRAINT signin_links_sha256_len CHECK (octet_length(id_sha256) = 32)
);
CREATE INDEX signin_links_expires_at_idx ON signin_links (expires_at);

-- +goose Down
DROP TABLE signin_links;
