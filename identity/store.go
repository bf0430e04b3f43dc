package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// ---- users ----

// UserColumns are the columns ScanUser maps, of the users table aliased
// u, for queries that join a user to the row they select.
const UserColumns = `u.id, u.username, u.display_name, u.role, u.disabled, u.email, u.version, u.created_at, u.updated_at`

// ScanUser maps a row that starts with UserColumns; more receives the
// columns that follow them.
func ScanUser(row pgx.Row, more ...any) (*User, error) {
	var u User
	dest := append([]any{&u.ID, &u.Username, &u.DisplayName, &u.Role, &u.Disabled, &u.Email, &u.Version, &u.CreatedAt, &u.UpdatedAt}, more...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	u.CreatedAt, u.UpdatedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	return &u, nil
}

// UserCreate inserts a user; a taken username or email address is 409
// CONFLICT.
func UserCreate(ctx context.Context, db store.Executor, p UserCreateParams) (*User, error) {
	username := strings.TrimSpace(p.Username)
	if username == "" {
		return nil, problem.Invalid("username", "is required")
	}
	if _, err := ParseRole(string(p.Role)); err != nil {
		return nil, err
	}
	display, err := displayName(p.DisplayName, username)
	if err != nil {
		return nil, err
	}
	var email *string
	if p.Email != "" {
		e, err := ParseEmail(p.Email)
		if err != nil {
			return nil, err
		}
		email = &e
	}
	u, err := ScanUser(db.QueryRow(ctx, `
		INSERT INTO users AS u (id, username, display_name, role, email)
		VALUES ($1, $2, $3, $4, $5)
		RETURNING `+UserColumns, uuid.Must(uuid.NewV7()), username, display, p.Role, email))
	if store.IsUniqueViolation(err, "users_username_key") {
		return nil, problem.Conflict(problem.CodeConflict, fmt.Sprintf("username %q is taken", username))
	}
	if store.IsUniqueViolation(err, "users_email_key") {
		return nil, emailTaken(*email)
	}
	if pe, ok := problem.As(store.MapError(err, "user")); ok && pe.Code == problem.CodeValidation {
		return nil, problem.Invalid("username", "must be 1–63 lowercase letters, digits, '.', '_' or '-'")
	}
	return u, store.MapError(err, "user")
}

// UserGetByUsername returns a user by name, 404 when there is none.
func UserGetByUsername(ctx context.Context, db store.Executor, username string) (*User, error) {
	u, err := ScanUser(db.QueryRow(ctx, `SELECT `+UserColumns+` FROM users u WHERE u.username = $1`, username))
	return u, store.MapError(err, "user")
}

// UserGetByID returns a user by id, 404 when there is none.
func UserGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*User, error) {
	u, err := ScanUser(db.QueryRow(ctx, `SELECT `+UserColumns+` FROM users u WHERE u.id = $1`, id))
	return u, store.MapError(err, "user")
}

// UserDisplayNames returns the display names of the users ids names, for
// pages that show people by name (the inbox's requesters and approvers);
// an id with no user is absent from the map.
func UserDisplayNames(ctx context.Context, db store.Executor, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	rows, err := db.Query(ctx, `SELECT id, display_name FROM users WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, store.MapError(err, "users")
	}
	names := make(map[uuid.UUID]string, len(ids))
	var id uuid.UUID
	var name string
	_, err = pgx.ForEachRow(rows, []any{&id, &name}, func() error {
		names[id] = name
		return nil
	})
	return names, store.MapError(err, "users")
}

// UserCountDeciders returns how many enabled users other than except may
// decide approvals (Role.CanDecide).
func UserCountDeciders(ctx context.Context, db store.Executor, except uuid.UUID) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM users WHERE role IN ('approver', 'admin') AND NOT disabled AND id <> $1`, except).Scan(&n)
	return n, store.MapError(err, "approvers")
}

// UserList returns the users of one page read with page.Request.Ahead,
// newest first, as every list of the API.
func UserList(ctx context.Context, db store.Executor, p page.Request) ([]*User, error) {
	var after struct{ at, id any }
	if c := p.After; c != nil {
		after.at, after.id = c.CreatedAt, c.ID
	}
	rows, err := db.Query(ctx, `SELECT `+UserColumns+` FROM users u
		WHERE $1::timestamptz IS NULL OR (u.created_at, u.id) < ($1, $2::uuid)
		ORDER BY u.created_at DESC, u.id DESC LIMIT $3`, after.at, after.id, p.Limit)
	if err != nil {
		return nil, store.MapError(err, "users")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*User, error) { return ScanUser(r) })
	return out, store.MapError(err, "users")
}

// UserSetDisabled disables or re-enables a user; a disabled user's tokens
// and sessions stop working at once. It sets the flag alone, as SQL would:
// accounts.Service.Update is the change that is audited and voids the
// user's approval decisions (ADR-0012); tests use this one to stand for a
// change made behind the service's back.
func UserSetDisabled(ctx context.Context, db store.Executor, id uuid.UUID, disabled bool) error {
	tag, err := db.Exec(ctx, `UPDATE users SET disabled = $2, version = version + 1, updated_at = now() WHERE id = $1`, id, disabled)
	if err != nil {
		return store.MapError(err, "user")
	}
	if tag.RowsAffected() == 0 {
		return problem.NotFound("user")
	}
	return nil
}

// UserLockShareTx returns user id, locked against changes until the
// caller's transaction ends: what they may do cannot change meanwhile.
func UserLockShareTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*User, error) {
	u, err := ScanUser(tx.QueryRow(ctx, `SELECT `+UserColumns+` FROM users u WHERE u.id = $1 FOR SHARE`, id))
	return u, store.MapError(err, "user")
}

// UserAdminLockTx returns user id, the actor of an admin's change, locked
// FOR SHARE until the caller's transaction ends, and refuses (403
// FORBIDDEN) unless they are an enabled admin (CheckAdmin). A request is
// authenticated when it arrives and commits later: an admin disabled or
// demoted meanwhile must not have it take effect. With the lock the two
// serialise: a change of the actor's role or flag waits for this
// transaction, or this one waits for it and then refuses.
func UserAdminLockTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, what string) (*User, error) {
	u, err := UserLockShareTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := u.CheckAdmin(what); err != nil {
		return nil, err
	}
	return u, nil
}

// ChangeLocks are the rows UserLockForChangeTx locked for a change.
type ChangeLocks struct {
	// User is the user to change.
	User *User
	// Actor is the user making the change as locked; nil when the change
	// is made by no user (ops through the CLI).
	Actor *User
	// OtherAdmins is how many enabled admins other than User exist.
	OtherAdmins int
}

// UserLockForChangeTx locks user id for a change by actor (uuid.Nil for
// no user), together with the actor and every enabled admin, all in id
// order, in one statement. Locking the admins makes the count hold until
// commit: two changes that would each leave one admin (two admins
// demoting each other) take the same locks in the same order, so the
// second waits and then counts what the first left. Locking the actor
// makes their authority hold until commit too (a change of it waits, or
// is waited for and then seen), and in the same statement: a FOR SHARE
// lock taken on them first and raised here would deadlock two admins'
// changes. FOR NO KEY UPDATE leaves rows that reference a user (tokens,
// sessions, decisions) free to be written meanwhile.
func UserLockForChangeTx(ctx context.Context, tx pgx.Tx, id, actor uuid.UUID) (ChangeLocks, error) {
	rows, err := tx.Query(ctx, `SELECT `+UserColumns+` FROM users u
		WHERE u.id = $1 OR u.id = $2 OR (u.role = 'admin' AND NOT u.disabled)
		ORDER BY u.id FOR NO KEY UPDATE`, id, actor)
	if err != nil {
		return ChangeLocks{}, store.MapError(err, "user")
	}
	locked, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*User, error) { return ScanUser(r) })
	if err != nil {
		return ChangeLocks{}, store.MapError(err, "user")
	}
	var out ChangeLocks
	for _, u := range locked {
		if u.ID == actor {
			out.Actor = u
		}
		switch {
		case u.ID == id:
			out.User = u
		case u.Role == RoleAdmin && !u.Disabled:
			out.OtherAdmins++
		}
	}
	if out.User == nil {
		return ChangeLocks{}, problem.NotFound("user")
	}
	return out, nil
}

// UserUpdateTx writes f onto user id (locked by UserLockForChangeTx) and
// returns the user as changed; an email address another user has is 409.
func UserUpdateTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, f UserFields) (*User, error) {
	u, err := ScanUser(tx.QueryRow(ctx, `UPDATE users AS u
		SET display_name = $2, role = $3, disabled = $4, email = $5, version = version + 1, updated_at = now()
		WHERE u.id = $1 RETURNING `+UserColumns, id, f.DisplayName, f.Role, f.Disabled, f.Email))
	if store.IsUniqueViolation(err, "users_email_key") {
		return nil, emailTaken(*f.Email)
	}
	return u, store.MapError(err, "user")
}

// ---- passwords ----

// PasswordSet stores a new password for the user named username and ends
// every web session they have, so a changed password locks out whoever
// knew the old one. A missing user is 404.
func PasswordSet(ctx context.Context, db store.Executor, username, password string) error {
	if err := PasswordValidate(password); err != nil {
		return err
	}
	hash, err := PasswordHash(password)
	if err != nil {
		return err
	}
	return store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `
			UPDATE users SET password_hash = $2, version = version + 1, updated_at = now()
			WHERE username = $1 RETURNING id`, username, hash).Scan(&id)
		if err != nil {
			return store.MapError(err, "user")
		}
		_, err = tx.Exec(ctx, `DELETE FROM web_sessions WHERE user_id = $1`, id)
		return store.MapError(err, "session")
	})
}

// CredentialsCheck returns the enabled user whose password matches, or a
// 401 that says the same whatever was wrong.
func CredentialsCheck(ctx context.Context, db store.Executor, username, password string) (*User, error) {
	wrong := problem.Unauthenticated("the username or password is wrong")
	var hash *string
	u, err := ScanUser(db.QueryRow(ctx, `SELECT `+UserColumns+`, u.password_hash FROM users u WHERE u.username = $1 AND NOT u.disabled`,
		username), &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		_, _ = PasswordVerify(dummyHash(), password)
		return nil, wrong
	}
	if err != nil {
		return nil, store.MapError(err, "user")
	}
	if hash == nil || len(password) > passwordMaxBytes {
		_, _ = PasswordVerify(dummyHash(), password)
		return nil, wrong
	}
	ok, err := PasswordVerify(*hash, password)
	if err != nil {
		return nil, fmt.Errorf("user %s: stored password hash: %w", username, err)
	}
	if !ok {
		return nil, wrong
	}
	return u, nil
}

// ---- API tokens ----

const tokenColumns = `t.id, t.user_id, t.name, t.created_at, t.last_used_at, t.revoked_at, t.oauth_client_id, t.scope`

func scanToken(row pgx.Row) (*Token, error) {
	var t Token
	if err := row.Scan(&t.ID, &t.UserID, &t.Name, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt, &t.OAuthClient, &t.Scope); err != nil {
		return nil, err
	}
	t.CreatedAt = t.CreatedAt.UTC()
	for _, p := range []**time.Time{&t.LastUsedAt, &t.RevokedAt} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
	return &t, nil
}

// TokenCreate issues a new API token for the user and returns it; only its
// SHA-256 is stored, so this is the one time it can be shown.
func TokenCreate(ctx context.Context, db store.Executor, userID uuid.UUID, name string) (string, error) {
	token, _, err := TokenIssue(ctx, db, userID, name)
	return token, err
}

// TokenIssue is TokenCreate that also returns the token's record.
func TokenIssue(ctx context.Context, db store.Executor, userID uuid.UUID, name string) (string, *Token, error) {
	var raw [32]byte // 256 bits
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, fmt.Errorf("token entropy: %w", err)
	}
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(token))
	t, err := scanToken(db.QueryRow(ctx, `INSERT INTO api_tokens AS t (id, user_id, token_sha256, name) VALUES ($1, $2, $3, $4)
		RETURNING `+tokenColumns, uuid.Must(uuid.NewV7()), userID, sum[:], name))
	if err != nil {
		return "", nil, store.MapError(err, "token")
	}
	return token, t, nil
}

// TokenList returns one page (read with page.Request.Ahead) of the
// tokens of user userID, revoked ones too, newest first.
func TokenList(ctx context.Context, db store.Executor, userID uuid.UUID, p page.Request) ([]*Token, error) {
	var after struct{ at, id any }
	if c := p.After; c != nil {
		after.at, after.id = c.CreatedAt, c.ID
	}
	rows, err := db.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens t
		WHERE t.user_id = $1 AND ($2::timestamptz IS NULL OR (t.created_at, t.id) < ($2, $3::uuid))
		ORDER BY t.created_at DESC, t.id DESC LIMIT $4`, userID, after.at, after.id, p.Limit)
	if err != nil {
		return nil, store.MapError(err, "tokens")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Token, error) { return scanToken(r) })
	return out, store.MapError(err, "tokens")
}

// TokenLockTx returns token id, locked for a change.
func TokenLockTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Token, error) {
	t, err := scanToken(tx.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens t WHERE t.id = $1 FOR UPDATE`, id))
	return t, store.MapError(err, "token")
}

// TokenRevokeTx revokes token id (locked by TokenLockTx): the next
// request that presents it is 401.
func TokenRevokeTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Token, error) {
	t, err := scanToken(tx.QueryRow(ctx, `UPDATE api_tokens AS t SET revoked_at = now()
		WHERE t.id = $1 RETURNING `+tokenColumns, id))
	return t, store.MapError(err, "token")
}

// TokenRevoke revokes every token of a user whose hash matches token.
// Admins revoke by id (TokenRevokeTx, audited); tests use this one to
// revoke a token they hold, as SQL would.
func TokenRevoke(ctx context.Context, db store.Executor, token string) error {
	sum := sha256.Sum256([]byte(token))
	tag, err := db.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE token_sha256 = $1 AND revoked_at IS NULL`, sum[:])
	if err != nil {
		return store.MapError(err, "token")
	}
	if tag.RowsAffected() == 0 {
		return problem.NotFound("token")
	}
	return nil
}

// lastUsedGranularity bounds writes for last_used_at to one per token per
// minute, so authentication stays a read on the hot path.
const lastUsedGranularity = time.Minute

// tokenHolder is the FROM and WHERE of the user holding the bearer token
// whose SHA-256 is parameter %d: a token not revoked, of a user not
// disabled. TokenAuthenticate and the statements that authenticate a
// deferred token (Caller) share it, so both admit exactly the same tokens.
const tokenHolder = `FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_sha256 = $%d AND t.revoked_at IS NULL AND NOT u.disabled`

// wellFormed reports whether token could be one of ours; anything else is
// refused without a statement.
func wellFormed(token string) bool {
	return strings.HasPrefix(token, tokenPrefix) && len(token) <= 128
}

// tokenRefused is the one answer to a token that does not authenticate:
// unknown or revoked tokens and disabled users alike, so a caller learns
// nothing about which.
func tokenRefused() error { return problem.Unauthenticated("the bearer token is not valid") }

var tokenAuthenticateSQL = `SELECT ` + UserColumns + `, t.id, t.last_used_at ` + fmt.Sprintf(tokenHolder, 1)

// TokenAuthenticate returns the user holding token. Unknown or revoked
// tokens and disabled users are all 401, with the same detail so a caller
// learns nothing about which.
func TokenAuthenticate(ctx context.Context, db store.Executor, token string) (*User, error) {
	if !wellFormed(token) {
		return nil, tokenRefused()
	}
	sum := sha256.Sum256([]byte(token))
	var (
		tokenID  uuid.UUID
		lastUsed *time.Time
	)
	u, err := ScanUser(db.QueryRow(ctx, tokenAuthenticateSQL, sum[:]), &tokenID, &lastUsed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, tokenRefused()
	}
	if err != nil {
		return nil, store.MapError(err, "token")
	}
	if lastUsed == nil || time.Since(*lastUsed) > lastUsedGranularity {
		if _, err := db.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE id = $1`, tokenID); err != nil {
			return nil, store.MapError(err, "token")
		}
	}
	return u, nil
}
