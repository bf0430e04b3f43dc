-- +goose Up
-- Where notifications reach a user (issue 17). A user without one is
-- skipped, and counted.
ALTER TABLE users ADD COLUMN email text;
ALTER TABLE users ADD CONSTRAINT users_email_len CHECK (char_length(email) <= 254);

-- +goose Down
ALTER TABLE users DROP COLUMN email;
