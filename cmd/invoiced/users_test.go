package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/outbox/outboxtest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// lastLine is the last line of out (where create commands print tokens).
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// ok runs the CLI and requires success.
func ok(t *testing.T, e env, args ...string) string {
	t.Helper()
	r := invoke(context.Background(), e, args...)
	require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	return r.stdout
}

// Users administered from the CLI: create with an email, list, role,
// disable and enable, email set and cleared; each change audited as the
// OS account that ran it, by the cli path.
func TestUsersAdministeredFromTheCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	e := env{"DATABASE_URL": url, "USER": "olivia"}
	pool := storetest.PoolFor(t, url)

	ok(t, e, "users", "create", "--username", "ada", "--role", "admin")
	bobTok := lastLine(ok(t, e, "users", "create", "--username", "bob", "--role", "approver", "--email", "bob@example.com"))
	out := ok(t, e, "users", "list")
	require.Regexp(t, `(?m)^bob\s+approver\s+enabled\s+bob@example\.com\s`, out)
	require.Regexp(t, `(?m)^ada\s+admin\s+enabled\s+-\s`, out)

	require.Equal(t, "user bob: disabled\n", ok(t, e, "users", "disable", "bob"))
	_, err := identity.TokenAuthenticate(ctx, pool, bobTok)
	require.True(t, problem.HasCode(err, problem.CodeUnauthenticated), "a disabled user's token stops working: %v", err)
	require.Equal(t, "user bob: enabled\n", ok(t, e, "users", "enable", "bob"))
	_, err = identity.TokenAuthenticate(ctx, pool, bobTok)
	require.NoError(t, err)
	require.Equal(t, "user bob: nothing to change\n", ok(t, e, "users", "enable", "bob"))

	require.Equal(t, "user bob: email Bob@Example.org\n", ok(t, e, "users", "email", "bob", "Bob@Example.org"))
	require.Equal(t, "user bob: email cleared\n", ok(t, e, "users", "email", "bob", "--clear"))
	require.Equal(t, "user bob: role approver → clerk\n", ok(t, e, "users", "role", "bob", "clerk"))

	var actor, via string
	require.NoError(t, pool.QueryRow(ctx, `SELECT event->>'actor', event->>'via' FROM audit_events WHERE type = 'user.updated' ORDER BY seq DESC LIMIT 1`).Scan(&actor, &via))
	require.Equal(t, "os:olivia", actor)
	require.Equal(t, "cli", via)

	// Refusals: exit 1 with the reason, nothing written.
	events := 0
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events`).Scan(&events))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"users", "disable", "ada"}, "last enabled admin"},
		{[]string{"users", "role", "ada", "clerk"}, "last enabled admin"},
		{[]string{"users", "role", "bob", "boss"}, "role"},
		{[]string{"users", "email", "bob", "not-an-address"}, "email"},
		{[]string{"users", "disable", "nobody"}, "user not found"},
		{[]string{"tokens", "revoke", "not-a-uuid"}, "not found"},
		{[]string{"tokens", "list", "nobody"}, "user not found"},
	} {
		r := invoke(ctx, e, tc.args...)
		require.Equal(t, 1, r.code, "%v: %s", tc.args, r.stdout)
		require.Contains(t, r.stderr, tc.says, tc.args)
	}
	for _, args := range [][]string{{"users"}, {"users", "rename", "bob"}, {"users", "role", "bob"}, {"users", "email", "bob"}, {"users", "disable"}, {"tokens"}, {"tokens", "revoke"}} {
		require.Equal(t, 2, invoke(ctx, e, args...).code, "%v is a usage error", args)
	}
	after := 0
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events`).Scan(&after))
	require.Equal(t, events, after, "refusals write nothing")
}

// Tokens from the CLI: list (never the token), revoke by id, after which
// the token is refused; the user's other tokens go on working.
func TestTokensListedAndRevokedFromTheCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	e := env{"DATABASE_URL": url}
	pool := storetest.PoolFor(t, url)
	first := lastLine(ok(t, e, "users", "create", "--username", "bob", "--role", "clerk"))
	second := lastLine(ok(t, e, "tokens", "create", "--username", "bob", "--name", "ci"))

	out := ok(t, e, "tokens", "list", "bob")
	require.NotContains(t, out, "inv_")
	rows := regexp.MustCompile(`(?m)^([0-9a-f-]{36})\s+(.*?)\s{2,}`).FindAllStringSubmatch(out, -1)
	require.Len(t, rows, 2, out)
	require.Equal(t, "ci", rows[0][2], "newest first")
	out = ok(t, e, "tokens", "revoke", rows[1][1])
	require.Contains(t, out, "revoked")

	_, err := identity.TokenAuthenticate(ctx, pool, first)
	require.True(t, problem.HasCode(err, problem.CodeUnauthenticated), "%v", err)
	_, err = identity.TokenAuthenticate(ctx, pool, second)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^`+rows[1][1]+`.*\d{4}-\d\d-\d\dT\S+\s*$`, ok(t, e, "tokens", "list", "bob"), "shown revoked")
	var revoked int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE type = 'token.revoked' AND event->>'via' = 'cli'`).Scan(&revoked))
	require.Equal(t, 1, revoked)
}

// Demoting an approver from the CLI takes back what they approved and
// says so; the request is pending again.
func TestUsersRoleFromTheCLIVoidsOpenApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	e := env{"DATABASE_URL": url}
	pool := storetest.PoolFor(t, url)
	ok(t, e, "users", "create", "--username", "ada", "--role", "admin")
	ok(t, e, "users", "create", "--username", "bob", "--role", "approver")
	ok(t, e, "users", "create", "--username", "clara", "--role", "clerk")
	clara, err := identity.UserGetByUsername(ctx, pool, "clara")
	require.NoError(t, err)

	input := []byte(`{"invoice_id":"inv-1"}`)
	hash, err := jsondoc.Hash(input)
	require.NoError(t, err)
	err = store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := approvals.NewGate(approvals.Policy{}, outboxtest.Emitter(t)).AuthorizeTx(ctx, tx,
			capability.Call{Name: "issue-invoice", Principal: clara.Principal(), Via: capability.PathREST, Input: input, InputHash: hash},
			capability.Target{Type: "invoice", ID: "inv-1", Version: 1, Amount: 100, Currency: "EUR"})
		return err
	})
	pe, isProblem := problem.As(err)
	require.True(t, isProblem, "%v", err)
	require.Equal(t, http.StatusForbidden, pe.Status)
	id := pe.Extra["approval_id"].(string)
	require.Contains(t, ok(t, e, "approvals", "approve", id, "--as", "bob"), "is approved")

	out := ok(t, e, "users", "role", "bob", "clerk")
	require.Equal(t, "user bob: role approver → clerk; their approval no longer counts on 1 open request(s), now waiting for other approvers\n", out)
	require.Regexp(t, `(?m)^`+id+`\s+pending\s.*\s0/1\s`, ok(t, e, "approvals", "list"))
}

func TestHelpOnEveryUsersAndTokensSubcommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"users", "--help"}, {"users", "list", "--help"}, {"users", "disable", "--help"}, {"users", "enable", "--help"},
		{"users", "role", "--help"}, {"users", "email", "--help"}, {"tokens", "--help"}, {"tokens", "list", "--help"},
		{"tokens", "revoke", "--help"},
	} {
		r := invoke(context.Background(), env{}, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stdout+r.stderr, "%v says what it does", args)
	}
}
