-- +goose NO TRANSACTION
-- +goose Up
-- The same rule for a conversation id, written so PostgreSQL checks it
-- quickly. Its regex engine expands a counted repetition into one copy of
-- the class per count: '^[A-Za-z0-9_-]{1,128}$' took 11.5 µs a
-- 32-character id, '+' with a length test 0.3 µs. The check runs on
-- every insert and every update of a conversation, twice a chat: 4.6 %
-- of PostgreSQL's CPU under make bench-chat.
-- One ALTER TABLE, so no moment goes without the rule; NOT VALID and then
-- VALIDATE on its own, outside a transaction, so the scan of the rows
-- there are takes SHARE UPDATE EXCLUSIVE (chats go on) instead of
-- ACCESS EXCLUSIVE. Run again after a failure, it starts over.
ALTER TABLE conversations
    DROP CONSTRAINT conversations_id_format,
    ADD CONSTRAINT conversations_id_format CHECK (id ~ '^[A-Za-z0-9_-]+$' AND length(id) <= 128) NOT VALID;
ALTER TABLE conversations VALIDATE CONSTRAINT conversations_id_format;

-- +goose Down
ALTER TABLE conversations
    DROP CONSTRAINT conversations_id_format,
    ADD CONSTRAINT conversations_id_format CHECK (id ~ '^[A-Za-z0-9_-]{1,128}$') NOT VALID;
ALTER TABLE conversations VALIDATE CONSTRAINT conversations_id_format;
