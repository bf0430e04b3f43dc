package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/modelcontextprotocol/go-sdk/auth"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// caller is who sent one HTTP request of a session. The SDK runs a
// session's handlers under the context of its initialize request, so the
// principal of a later request reaches a handler only as the request's
// TokenInfo, which verify fills from identity.Authenticate's work.
type caller struct {
	identity.Principal
	// reqCtx is the HTTP request's context: it carries the credential
	// identity.Recheck checks again.
	reqCtx context.Context
}

const callerKey = "invoiced.caller"

// verify turns the principal identity.Authenticate found for this request
// into the SDK's TokenInfo. The UserID binds a session to its user, role
// and whether the credential is read-only: a request with another token,
// or after a role change, on the same session is refused with 403, so an
// approver never inherits a clerk's tools, nor a read-only grant a
// writer's session.
func verify(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	p, ok := identity.FromContext(r.Context())
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	user := p.UserID.String() + "/" + string(p.Role)
	if p.ReadOnly {
		user += "/read"
	}
	return &auth.TokenInfo{
		UserID: user,
		Extra:  map[string]any{callerKey: caller{Principal: p, reqCtx: r.Context()}},
	}, nil
}

var errNoCaller = errors.New("mcp: request without an authenticated caller")

// callerOf returns the caller of the request a handler serves.
func callerOf(extra *gomcp.RequestExtra) (caller, error) {
	if extra == nil || extra.TokenInfo == nil {
		return caller{}, errNoCaller
	}
	c, ok := extra.TokenInfo.Extra[callerKey].(caller)
	if !ok {
		return caller{}, errNoCaller
	}
	return c, nil
}

// recheck checks the request's credential again when its last check is
// older than maxAge, before a call acts on it (ADR-0011 #20): a call that
// waited on the user for minutes must not act for a revoked token.
func (c caller) recheck(maxAge time.Duration) error {
	if time.Since(identity.CheckedAt(c.reqCtx)) <= maxAge {
		return nil
	}
	return identity.Recheck(c.reqCtx)
}

// sdkLogger passes the SDK's warnings and errors to log; its info lines
// (one per subscription and notification) would drown the access log.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
