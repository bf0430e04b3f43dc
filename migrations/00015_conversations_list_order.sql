-- +goose Up
-- GET /v1/conversations pages an owner's conversations newest first by the
-- (created_at, id) keyset every list uses. created_at never changes, so
-- taking and releasing a lease still updates the row in place (HOT,
-- 00008); the index also serves ON DELETE CASCADE from users.
DROP INDEX conversations_owner_idx;
CREATE INDEX conversations_owner_created_idx ON conversations (owner_id, created_at DESC, id DESC);

-- +goose Down
DROP INDEX conversations_owner_created_idx;
CREATE INDEX conversations_owner_idx ON conversations (owner_id);
