// Package accounts administers users and their API tokens: create, list,
// change role, disable and enable, set an email address, list and revoke
// tokens. Every change is audited (who, what, before → after) and takes
// effect at once. It sits above identity and approvals because taking a
// user's authority away also voids their decisions on open approval
// requests, in the same transaction (ADR-0012).
package accounts

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// CodeLastAdmin refuses a change that would leave no enabled admin: no
// one could then administer users, and only SQL would get back in.
const CodeLastAdmin = "LAST_ADMIN"

// Actor is who makes a change: an admin through the API, or ops through
// the CLI (no user id; the name is the OS account).
type Actor struct {
	UserID uuid.UUID
	Name   string
	Via    capability.Path
}

// ActorOf is p acting by via.
func ActorOf(p identity.Principal, via capability.Path) Actor {
	return Actor{UserID: p.UserID, Name: p.Username, Via: via}
}

func (a Actor) id() string {
	if a.UserID == uuid.Nil {
		return ""
	}
	return a.UserID.String()
}

// what an actor must be an enabled admin to do, as a refusal names it.
const administer = "administer users and tokens"

// lockTx locks the acting user until the caller's transaction ends and
// refuses (403 FORBIDDEN) unless they are an enabled admin
// (identity.UserAdminLockTx); ops through the CLI act as no user.
func (a Actor) lockTx(ctx context.Context, tx pgx.Tx) error {
	if a.UserID == uuid.Nil {
		return nil
	}
	_, err := identity.UserAdminLockTx(ctx, tx, a.UserID, administer)
	return err
}

// check refuses (403 FORBIDDEN) an actor locked as u who is not an
// enabled admin; ops through the CLI (u nil) act as no user.
func (a Actor) check(u *identity.User) error {
	if a.UserID == uuid.Nil {
		return nil
	}
	if u == nil {
		return problem.Forbidden("only an enabled admin may " + administer)
	}
	return u.CheckAdmin(administer)
}

func (a Actor) event(typ, subjectType string, subject uuid.UUID, data map[string]any) audit.Event {
	return audit.Event{Type: typ, ActorID: a.id(), Actor: a.Name, Via: string(a.Via), SubjectType: subjectType, SubjectID: subject.String(), Data: data}
}

// Service administers users and tokens.
type Service struct {
	db        store.Executor
	approvals *approvals.Service
}

// NewService returns a service over db that voids decisions through
// approvals.
func NewService(db store.Executor, approvals *approvals.Service) *Service {
	return &Service{db: db, approvals: approvals}
}

// Create adds a user and an API token for them, and returns both; the
// token is shown this once (only its SHA-256 is stored).
func (s *Service) Create(ctx context.Context, by Actor, p identity.UserCreateParams, tokenName string) (*identity.User, string, error) {
	type created struct {
		u     *identity.User
		token string
	}
	c, err := store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (created, error) {
		if err := by.lockTx(ctx, tx); err != nil {
			return created{}, err
		}
		u, err := identity.UserCreate(ctx, tx, p)
		if err != nil {
			return created{}, err
		}
		tok, err := s.tokenCreateTx(ctx, tx, by, u, tokenName)
		if err != nil {
			return created{}, err
		}
		_, err = audit.AppendTx(ctx, tx, by.event("user.created", "user", u.ID, map[string]any{
			"username": u.Username, "display_name": u.DisplayName, "role": string(u.Role), "email": u.Email,
		}))
		return created{u, tok}, err
	})
	return c.u, c.token, err
}

// TokenCreate issues a new API token for user id and returns it, shown
// this once.
func (s *Service) TokenCreate(ctx context.Context, by Actor, id uuid.UUID, name string) (string, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (string, error) {
		if err := by.lockTx(ctx, tx); err != nil {
			return "", err
		}
		u, err := identity.UserGetByID(ctx, tx, id)
		if err != nil {
			return "", err
		}
		return s.tokenCreateTx(ctx, tx, by, u, name)
	})
}

func (s *Service) tokenCreateTx(ctx context.Context, tx pgx.Tx, by Actor, u *identity.User, name string) (string, error) {
	tok, t, err := identity.TokenIssue(ctx, tx, u.ID, name)
	if err != nil {
		return "", err
	}
	_, err = audit.AppendTx(ctx, tx, by.event("token.created", "token", t.ID, map[string]any{
		"user_id": u.ID.String(), "username": u.Username, "name": t.Name,
	}))
	return tok, err
}

// List returns a page of users, newest first.
func (s *Service) List(ctx context.Context, p page.Request) (page.List[*identity.User], error) {
	rows, err := identity.UserList(ctx, s.db, p.Ahead())
	if err != nil {
		return page.List[*identity.User]{}, err
	}
	return page.Of(rows, p.Limit), nil
}

// Get returns user id, 404 when there is none.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*identity.User, error) {
	return identity.UserGetByID(ctx, s.db, id)
}

// GetByUsername returns the user named username, 404 when there is none.
func (s *Service) GetByUsername(ctx context.Context, username string) (*identity.User, error) {
	return identity.UserGetByUsername(ctx, s.db, username)
}

// Patch is a change to a user; nil fields stay as they are. SetEmail
// says Email is to be written, nil clearing it.
type Patch struct {
	DisplayName *string
	Role        *identity.Role
	Disabled    *bool
	SetEmail    bool
	Email       *string
}

// check validates the patch's values and returns it normalised.
func (p Patch) check() (Patch, error) {
	if p.DisplayName != nil {
		n, err := identity.DisplayNameCheck(*p.DisplayName)
		if err != nil {
			return p, err
		}
		p.DisplayName = &n
	}
	if p.Role != nil {
		if _, err := identity.ParseRole(string(*p.Role)); err != nil {
			return p, err
		}
	}
	if p.SetEmail && p.Email != nil {
		e, err := identity.ParseEmail(*p.Email)
		if err != nil {
			return p, err
		}
		p.Email = &e
	}
	return p, nil
}

func (p Patch) apply(f identity.UserFields) identity.UserFields {
	if p.DisplayName != nil {
		f.DisplayName = *p.DisplayName
	}
	if p.Role != nil {
		f.Role = *p.Role
	}
	if p.Disabled != nil {
		f.Disabled = *p.Disabled
	}
	if p.SetEmail {
		f.Email = p.Email
	}
	return f
}

// Update applies p to user id, at a version ifMatch names, if any (412
// VERSION_MISMATCH otherwise), and returns the user. An actor who is no
// longer an enabled admin when the change would commit is 403 FORBIDDEN
// with nothing written. A change that would leave no enabled admin is
// 409 LAST_ADMIN with nothing written. A user who loses the authority
// to decide approvals (disabled, or no longer an approver or admin)
// loses their decisions on open requests in the same transaction;
// Updated.Voided names the requests that lost an approval. A change
// that changes nothing writes nothing.
func (s *Service) Update(ctx context.Context, by Actor, id uuid.UUID, ifMatch etag.IfMatch, p Patch) (*Updated, error) {
	p, err := p.check()
	if err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Updated, error) {
		// Users first, then the requests they decided (VoidDecisionsTx),
		// then the audit chain: the lock order of approvals/live.go.
		locks, err := identity.UserLockForChangeTx(ctx, tx, id, by.UserID)
		if err != nil {
			return nil, err
		}
		if err := by.check(locks.Actor); err != nil {
			return nil, err
		}
		before, otherAdmins := locks.User, locks.OtherAdmins
		if err := etag.CheckIfMatch(ifMatch, before.Version); err != nil {
			return nil, err
		}
		next := p.apply(before.Fields())
		changes := diff(before.Fields(), next)
		if len(changes) == 0 {
			return &Updated{User: before}, nil
		}
		if isAdmin(before.Fields()) && !isAdmin(next) && otherAdmins == 0 {
			return nil, problem.Conflict(CodeLastAdmin, fmt.Sprintf(
				"%s is the last enabled admin: make another user admin first, then change %s", before.Username, before.Username))
		}
		after, err := identity.UserUpdateTx(ctx, tx, id, next)
		if err != nil {
			return nil, err
		}
		out := &Updated{User: after}
		data := map[string]any{"username": after.Username, "changes": changes}
		// Voided whenever role or disabled changed and the user may not
		// decide: decisions made before a change behind the service's
		// back (SQL) go too.
		_, roleChanged := changes["role"]
		_, disabledChanged := changes["disabled"]
		if reason := approvals.Lapse(after); reason != "" && (roleChanged || disabledChanged) {
			if out.Voided, err = s.approvals.VoidDecisionsTx(ctx, tx, approvals.Actor{ID: by.id(), Name: by.Name, Via: by.Via}, after.ID, reason); err != nil {
				return nil, err
			}
			voided := make([]string, len(out.Voided))
			for i, v := range out.Voided {
				voided[i] = v.String()
			}
			data["approvals_voided"] = voided
		}
		if _, err := audit.AppendTx(ctx, tx, by.event("user.updated", "user", after.ID, data)); err != nil {
			return nil, err
		}
		return out, nil
	})
}

// Updated is a user after Update, and the open approval requests on which
// their decisions stopped counting.
type Updated struct {
	User   *identity.User
	Voided []uuid.UUID
}

func isAdmin(f identity.UserFields) bool { return f.Role == identity.RoleAdmin && !f.Disabled }

// diff is each changed field, {from, to}, as the audit event records it.
func diff(a, b identity.UserFields) map[string]any {
	out := map[string]any{}
	change := func(name string, from, to any) { out[name] = map[string]any{"from": from, "to": to} }
	if a.DisplayName != b.DisplayName {
		change("display_name", a.DisplayName, b.DisplayName)
	}
	if a.Role != b.Role {
		change("role", string(a.Role), string(b.Role))
	}
	if a.Disabled != b.Disabled {
		change("disabled", a.Disabled, b.Disabled)
	}
	if (a.Email == nil) != (b.Email == nil) || (a.Email != nil && *a.Email != *b.Email) {
		change("email", a.Email, b.Email)
	}
	return out
}

// Tokens returns a page of user id's tokens, revoked ones too, newest
// first; an unknown user is 404.
func (s *Service) Tokens(ctx context.Context, id uuid.UUID, p page.Request) (page.List[*identity.Token], error) {
	var rows []*identity.Token
	err := store.ReadSnapshot(ctx, s.db, func(db store.Executor) error {
		if _, err := identity.UserGetByID(ctx, db, id); err != nil {
			return err
		}
		var err error
		rows, err = identity.TokenList(ctx, db, id, p.Ahead())
		return err
	})
	if err != nil {
		return page.List[*identity.Token]{}, err
	}
	return page.Of(rows, p.Limit), nil
}

// TokenRevoke revokes token id: the next request that presents it is
// 401, and an event stream it opened ends within one heartbeat. Revoking
// a revoked token answers it as it is and writes nothing.
func (s *Service) TokenRevoke(ctx context.Context, by Actor, id uuid.UUID) (*identity.Token, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*identity.Token, error) {
		if err := by.lockTx(ctx, tx); err != nil {
			return nil, err
		}
		t, err := identity.TokenLockTx(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if t.RevokedAt != nil {
			return t, nil
		}
		u, err := identity.UserGetByID(ctx, tx, t.UserID)
		if err != nil {
			return nil, err
		}
		if t, err = identity.TokenRevokeTx(ctx, tx, id); err != nil {
			return nil, err
		}
		_, err = audit.AppendTx(ctx, tx, by.event("token.revoked", "token", t.ID, map[string]any{
			"user_id": u.ID.String(), "username": u.Username, "name": t.Name,
		}))
		return t, err
	})
}
