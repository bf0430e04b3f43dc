// Package identity holds users, roles and API tokens, and the Bearer
// authentication middleware that turns a token into the Principal a call acts
// for. An agent never has authority of its own: it acts as the Principal of
// the chat user whose credentials opened the conversation.
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
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/text"
	"github.com/jackc/pgx/v5"
)

// Role is what a user may do (DESIGN.md §7).
type Role string

// The roles. clerk: read, drafts, customers, bound capabilities, request
// approvals, chat. approver: read and decide approvals (never their own
// requests). admin: all.
const (
	RoleClerk    Role = "clerk"
	RoleApprover Role = "approver"
	RoleAdmin    Role = "admin"
)

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleClerk, RoleApprover, RoleAdmin:
		return r, nil
	}
	return "", problem.Invalid("role", "must be one of clerk, approver, admin")
}

// CanDecide reports whether the role may decide approvals.
func (r Role) CanDecide() bool { return r == RoleApprover || r == RoleAdmin }

// User is a person (or service account) that signs in or holds tokens.
type User struct {
	ID          uuid.UUID `json:"id"`
	Username    string    `json:"username"`
	DisplayName string    `json:"display_name"`
	Role        Role      `json:"role"`
	Disabled    bool      `json:"disabled"`
	// Email is where notifications reach the user; nil when none is set.
	Email     *string   `json:"email"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CheckAdmin refuses (403 FORBIDDEN) unless u is an enabled admin; what
// says what they tried ("change the approval policy").
func (u *User) CheckAdmin(what string) error {
	if u.Disabled || u.Role != RoleAdmin {
		return problem.Forbidden("only an enabled admin may " + what)
	}
	return nil
}

// Principal is the authenticated user a call acts for.
type Principal struct {
	UserID   uuid.UUID `json:"id"`
	Username string    `json:"username"`
	Role     Role      `json:"role"`
}

// Principal returns the user as a Principal.
func (u *User) Principal() Principal {
	return Principal{UserID: u.ID, Username: u.Username, Role: u.Role}
}

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

// UserCreateParams are the fields of a new user.
type UserCreateParams struct {
	Username    string
	DisplayName string
	Role        Role
	// Email is optional ("" for none); see ParseEmail.
	Email string
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

// displayName is the name other users are shown for a user (an approver
// reads who asked): the username when none is given, else DisplayNameCheck's.
func displayName(s, username string) (string, error) {
	if s == "" {
		return username, nil
	}
	return DisplayNameCheck(s)
}

// maxDisplayName bounds a display name (characters): it is shown in lists
// and beside every decision.
const maxDisplayName = 200

// DisplayNameCheck returns a display name trimmed, refusing one that shows
// nothing or reorders what is shown (text.Name's rule) or is longer than
// 200 characters, naming the field display_name.
func DisplayNameCheck(s string) (string, error) {
	if err := text.Name(s); err != nil {
		return "", problem.Invalid("display_name", "%s", err)
	}
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > maxDisplayName {
		return "", problem.Invalid("display_name", "must be at most %d characters", maxDisplayName)
	}
	return s, nil
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

// tokenPrefix marks invoiced tokens so secret scanners can find leaked ones.
const tokenPrefix = "inv_"

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

// TokenRevoke revokes every token of a user whose hash matches token.
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

// TokenAuthenticate returns the user holding token. Unknown or revoked
// tokens and disabled users are all 401, with the same detail so a caller
// learns nothing about which.
func TokenAuthenticate(ctx context.Context, db store.Executor, token string) (*User, error) {
	if !strings.HasPrefix(token, tokenPrefix) || len(token) > 128 {
		return nil, problem.Unauthenticated("the bearer token is not valid")
	}
	sum := sha256.Sum256([]byte(token))
	var (
		tokenID  uuid.UUID
		lastUsed *time.Time
	)
	u, err := ScanUser(db.QueryRow(ctx, `
		SELECT `+UserColumns+`, t.id, t.last_used_at
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_sha256 = $1 AND t.revoked_at IS NULL AND NOT u.disabled`, sum[:]), &tokenID, &lastUsed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, problem.Unauthenticated("the bearer token is not valid")
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
