// Package identity holds users, roles and API tokens, and the Bearer
// authentication middleware that turns a token into the Principal a call acts
// for. An agent never has authority of its own: it acts as the Principal of
// the chat user whose credentials opened the conversation.
package identity

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/text"
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

// allRoles are all the roles.
var allRoles = []Role{RoleClerk, RoleApprover, RoleAdmin}

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(allRoles, r) {
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
	// ReadOnly is set when the credential allows reads alone whatever
	// the role (an OAuth grant of scope read): /mcp then offers no tool
	// that writes.
	ReadOnly bool `json:"read_only,omitempty"`
}

// Principal returns the user as a Principal.
func (u *User) Principal() Principal {
	return Principal{UserID: u.ID, Username: u.Username, Role: u.Role}
}

// UserCreateParams are the fields of a new user.
type UserCreateParams struct {
	Username    string
	DisplayName string
	Role        Role
	// Email is optional ("" for none); see ParseEmail.
	Email string
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

// tokenPrefix marks invoiced tokens so secret scanners can find leaked ones.
const tokenPrefix = "inv_"
