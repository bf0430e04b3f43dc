-- +goose Up
-- Disabling a user ends their inbox sessions. The session lookup already
-- refuses a disabled user, but re-enabling them would otherwise bring back
-- every unexpired session (up to 12 h old), signed in from wherever it
-- was. A trigger covers every path that disables: the CLI, SQL, the API.
-- +goose StatementBegin
CREATE FUNCTION web_sessions_end_on_disable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM web_sessions WHERE user_id = NEW.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER users_disabled_end_sessions
    AFTER UPDATE OF disabled ON users
    FOR EACH ROW WHEN (NEW.disabled AND NOT OLD.disabled)
    EXECUTE FUNCTION web_sessions_end_on_disable();

-- +goose Down
DROP TRIGGER users_disabled_end_sessions ON users;
DROP FUNCTION web_sessions_end_on_disable();
