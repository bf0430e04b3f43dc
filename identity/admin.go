package identity

import (
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/text"
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
	if s == "" || len(s) > maxEmailLen || strings.Count(s, "@") != 1 {
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

// Token is an API token as admins see it: never the token itself, which
// only its holder was shown, once.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	UserID     uuid.UUID  `json:"user_id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// OAuthClient is, for an OAuth grant (ADR-0023), its client's id;
	// its access and refresh tokens die with it.
	OAuthClient *string `json:"oauth_client"`
	// Scope is an OAuth grant's scope ("read" or "read write").
	Scope *string `json:"scope"`
}

// Cursor is the token's position in the list's keyset order.
func (t *Token) Cursor() page.Cursor { return page.Cursor{CreatedAt: t.CreatedAt, ID: t.ID} }
