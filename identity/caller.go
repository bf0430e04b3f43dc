package identity

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

// Caller is who a request comes from, as the handler of a route that
// defers its bearer token (DeferBearer) sees it: a principal, or the token
// until the handler's first statement authenticates it (TokenHolderCTE,
// Settle) or Principal looks it up.
type Caller struct {
	cred *credential // the deferred token; nil once p is known
	p    Principal
	at   time.Time // when the statement that authenticates cred was sent
}

// RequestCaller returns the request's caller.
func RequestCaller(c echo.Context) (*Caller, error) {
	ctx := c.Request().Context()
	if p, ok := FromContext(ctx); ok {
		return &Caller{p: p}, nil
	}
	if cred := deferred(ctx); cred != nil {
		return &Caller{cred: cred}, nil
	}
	return nil, problem.Unauthenticated("authentication is required")
}

// Known returns the caller's principal if it is already authenticated.
func (c *Caller) Known() (Principal, bool) { return c.p, c.cred == nil }

// Principal returns the caller's principal, looking a deferred token up as
// Authenticate would have (a 401 or 403 when it does not authenticate).
func (c *Caller) Principal(ctx context.Context) (Principal, error) {
	if c.cred == nil {
		return c.p, nil
	}
	p, err := c.cred.resolve(ctx)
	if err != nil {
		return Principal{}, err
	}
	c.p, c.cred = p, nil
	return p, nil
}

// Refusal is err as the answer to the request unless the caller does not
// authenticate, whose 401 or 403 comes first: a caller without authority
// learns nothing about the request from how it was refused.
func (c *Caller) Refusal(ctx context.Context, err error) error {
	if _, aerr := c.Principal(ctx); aerr != nil {
		return aerr
	}
	return err
}

// Bearer returns the arguments of TokenHolderCTE for a caller not yet
// authenticated (ok false otherwise): the token's SHA-256 and the roles
// the route admits. It notes now as the time of the check the statement
// makes, for Recheck, since the statement runs after it.
func (c *Caller) Bearer() (sha256 []byte, admitted []string, ok bool) {
	if c.cred == nil {
		return nil, nil, false
	}
	c.at = time.Now()
	c.cred.mu.Lock()
	defer c.cred.mu.Unlock()
	for _, r := range allRoles {
		if c.cred.admits(r) {
			admitted = append(admitted, string(r))
		}
	}
	return c.cred.sha256, admitted, true
}

// TokenHolderCTE returns the common table expressions, to follow a WITH,
// by which a statement authenticates a deferred token as it acts: name
// selects the user holding the token whose SHA-256 is parameter hashParam
// (not revoked, the user not disabled: what TokenAuthenticate checks) if
// their role is among parameter rolesParam (text[], the route's
// RequireRole), as columns holder_id, holder_username and holder_role;
// name_used records the token's use as TokenAuthenticate does. The
// statement must act only on rows joined to name, so that a token that
// does not authenticate changes nothing.
func TokenHolderCTE(name string, hashParam, rolesParam int) string {
	return fmt.Sprintf(`%[1]s AS (
			SELECT u.id AS holder_id, u.username AS holder_username, u.role AS holder_role, t.id AS holder_token,
			       t.last_used_at AS holder_last_used
			  `+fmt.Sprintf(tokenHolder, hashParam)+`
			   AND u.role = ANY($%[2]d::text[])
		), %[1]s_used AS (
			UPDATE api_tokens SET last_used_at = now() FROM %[1]s
			 WHERE api_tokens.id = %[1]s.holder_token
			   AND (%[1]s.holder_last_used IS NULL OR %[1]s.holder_last_used < now() - interval '%[3]d seconds')
		)`, name, rolesParam, int(lastUsedGranularity/time.Second))
}

// Holder is the user a statement authenticated: its holder_id,
// holder_username and holder_role (TokenHolderCTE).
type Holder struct {
	ID       uuid.UUID
	Username string
	Role     Role
}

// Settle authenticates the caller as the statement that returned h did,
// at the time Bearer noted: the principal for the rest of the request and
// for Recheck.
func (c *Caller) Settle(h Holder) Principal {
	p := Principal{UserID: h.ID, Username: h.Username, Role: h.Role}
	if c.cred == nil {
		return c.p
	}
	c.cred.mu.Lock()
	c.cred.p, c.cred.at = &p, c.at
	c.cred.mu.Unlock()
	c.p, c.cred = p, nil
	return p
}
