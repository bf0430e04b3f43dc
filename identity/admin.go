package identity

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/text"
	"github.com/jackc/pgx/v5"
)

// maxEmailLen is RFC 5321's limit on a forward path (254 octets of
// address), which is also what the users table allows.
const maxEmailLen = 254

// ParseEmail validates an email address: a bare address (no display
// name, no comments), one '@', at most 254 bytes, and nothing in it that
// reorders what is shown or shows nothing (text.Address: mail would go
// elsewhere than a reader sees). Surrounding spaces are trimmed. Case is
// kept as given: uniqueness ignores it.
func ParseEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if err := text.Address(s); err != nil {
		return "", problem.Invalid("email", "%s", err)
	}
	bad := problem.Invalid("email", "must be an email address such as ada@example.com")
	if s == "" || len(s) > maxEmailLen || strings.Count(s, "@") != 1 || strings.ContainsAny(s, " \t\r\n") {
		return "", bad
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", bad
	}
	return s, nil
}

func emailTaken(email string) *problem.Error {
	return problem.Conflict(problem.CodeConflict, fmt.Sprintf("the email address %q belongs to another user", email))
}

// Cursor is the user's position in the list's keyset order.
func (u *User) Cursor() page.Cursor { return page.Cursor{CreatedAt: u.CreatedAt, ID: u.ID} }

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

// UserLockShareTx returns user id, locked against changes until the
// caller's transaction ends: what they may do cannot change meanwhile.
func UserLockShareTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*User, error) {
	u, err := ScanUser(tx.QueryRow(ctx, `SELECT `+UserColumns+` FROM users u WHERE u.id = $1 FOR SHARE`, id))
	return u, store.MapError(err, "user")
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

// UserFields are the fields of a user an admin changes; Email nil clears
// the address.
type UserFields struct {
	DisplayName string
	Role        Role
	Disabled    bool
	Email       *string
}

// Fields returns u's changeable fields.
func (u *User) Fields() UserFields {
	return UserFields{DisplayName: u.DisplayName, Role: u.Role, Disabled: u.Disabled, Email: u.Email}
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

// Token is an API token as admins see it: never the token itself, which
// only its holder was shown, once.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	UserID     uuid.UUID  `json:"user_id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// Cursor is the token's position in the list's keyset order.
func (t *Token) Cursor() page.Cursor { return page.Cursor{CreatedAt: t.CreatedAt, ID: t.ID} }

const tokenColumns = `t.id, t.user_id, t.name, t.created_at, t.last_used_at, t.revoked_at`

func scanToken(row pgx.Row) (*Token, error) {
	var t Token
	if err := row.Scan(&t.ID, &t.UserID, &t.Name, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt); err != nil {
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
