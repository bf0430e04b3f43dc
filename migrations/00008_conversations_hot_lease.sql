-- +goose Up
-- Taking and releasing a conversation's lease (busy_token, busy_until,
-- updated_at) happens twice per chat request. With updated_at in the owner
-- index every one of those updates wrote new entries in both indexes; with
-- no indexed column touched, PostgreSQL updates the row in place (a HOT
-- update) when its page has room, which the fill factor keeps. owner_id
-- alone still serves ON DELETE CASCADE from users and any per-owner list.
DROP INDEX conversations_owner_idx;
CREATE INDEX conversations_owner_idx ON conversations (owner_id);
ALTER TABLE conversations SET (fillfactor = 80);

-- +goose Down
ALTER TABLE conversations RESET (fillfactor);
DROP INDEX conversations_owner_idx;
CREATE INDEX conversations_owner_idx ON conversations (owner_id, updated_at DESC);
