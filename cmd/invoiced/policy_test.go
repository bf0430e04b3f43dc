package main

import (
	"context"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// policyVersion is the version `policy list` reports.
func policyVersion(t *testing.T, e env) string {
	t.Helper()
	r := invoke(context.Background(), e, "policy", "list")
	require.Equal(t, 0, r.code, r.stderr)
	first, _, _ := strings.Cut(r.stdout, ",")
	return first
}

// ruleID is the id of the line of `policy list` that contains match.
func ruleID(t *testing.T, out, match string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, match) {
			return strings.Fields(line)[0]
		}
	}
	t.Fatalf("no rule %q in:\n%s", match, out)
	return ""
}

func TestPolicyCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	pool := storetest.PoolFor(t, url)
	e := env{"DATABASE_URL": url}
	for name, role := range map[string]identity.Role{"ada": identity.RoleAdmin, "bob": identity.RoleApprover} {
		_, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: role})
		require.NoError(t, err)
	}

	r := invoke(ctx, e, "policy", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "approval policy version 1, made ")
	require.Contains(t, r.stdout, "by the initial migration")
	require.Contains(t, r.stdout, "issue-invoice      *         10000 major units of the invoice's currency  2")
	require.Contains(t, r.stdout, "issue-credit-note  *         10000 major units of the invoice's currency  2")
	require.Contains(t, r.stdout, "No tiers (one approver always): void-invoice, delete-invoice")
	require.Contains(t, r.stdout, "record-payment     *         10000 major units of the invoice's currency  1          -")

	r = invoke(ctx, e, "policy", "set", "--capability", "issue-invoice", "--currency", "JPY", "--min-amount", "1000000", "--approvers", "2", "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "approval policy version 2")
	require.Contains(t, r.stdout, "by ada")
	require.Contains(t, r.stdout, "JPY       1,000,000 JPY (1000000 minor units)")
	r = invoke(ctx, e, "policy", "set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1000000", "--approvers", "2", "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "EUR       10,000.00 EUR (1000000 minor units)")
	eur := ruleID(t, r.stdout, "EUR")

	// Refusals write nothing and say why, naming the field.
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no --as":        {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1", "--approvers", "2"}, 2, "--as"},
		"approver":       {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1", "--approvers", "2", "--as", "bob"}, 1, "admin"},
		"unknown user":   {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1", "--approvers", "2", "--as", "nobody"}, 1, "not found"},
		"read cap":       {[]string{"set", "--capability", "list-invoices", "--currency", "EUR", "--min-amount", "1", "--approvers", "2", "--as", "ada"}, 1, "capability must be"},
		"currency":       {[]string{"set", "--capability", "issue-invoice", "--currency", "ZZZ", "--min-amount", "1", "--approvers", "2", "--as", "ada"}, 1, "currency must be"},
		"minor for *":    {[]string{"set", "--capability", "issue-invoice", "--currency", "*", "--min-amount", "1", "--approvers", "2", "--as", "ada"}, 1, "min_amount_major"},
		"negative":       {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "-1", "--approvers", "2", "--as", "ada"}, 1, "min_amount must be"},
		"approvers":      {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1", "--approvers", "11", "--as", "ada"}, 1, "approvers must be"},
		"not a number":   {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "ten", "--approvers", "2", "--as", "ada"}, 2, "min-amount"},
		"stray argument": {[]string{"set", "extra", "--as", "ada"}, 2, "Usage"},
		"delete no --as": {[]string{"delete", eur}, 2, "--as"},
		"delete bad id":  {[]string{"delete", "nope", "--as", "ada"}, 1, "not found"},
		"delete as bob":  {[]string{"delete", eur, "--as", "bob"}, 1, "admin"},
		"list version":   {[]string{"list", "--version", "9"}, 1, "version 9 not found"},
		"subcommand":     {[]string{"edit"}, 2, "Usage"},
		"window of 0": {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1", "--approvers", "2",
			"--window-days", "0", "--scope", "customer", "--as", "ada"}, 1, "window_days must be"},
		"no scope": {[]string{"set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1", "--approvers", "2",
			"--window-days", "30", "--as", "ada"}, 1, "scope is required"},
		"void without approver": {[]string{"set", "--capability", "void-invoice", "--currency", "EUR", "--min-amount", "1", "--approvers", "0", "--as", "ada"}, 1, "consequential"},
	} {
		r := invoke(ctx, e, append([]string{"policy"}, tc.args...)...)
		require.Equal(t, tc.code, r.code, "%s: %s", name, r.stderr)
		require.Contains(t, r.stderr, tc.want, name)
		require.Equal(t, "approval policy version 3", policyVersion(t, e), "%s changed nothing", name)
	}

	r = invoke(ctx, e, "policy", "delete", eur, "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "approval policy version 4")
	r = invoke(ctx, e, "policy", "set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "1000000", "--approvers", "2",
		"--window-days", "30", "--scope", "customer", "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "approval policy version 5")
	require.Regexp(t, `issue-invoice +EUR +10,000\.00 EUR \(1000000 minor units\) +2 +30 days, same customer +anyone\n`, r.stdout)
	r = invoke(ctx, e, "policy", "delete", ruleID(t, r.stdout, "30 days"), "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "EUR")
	r = invoke(ctx, e, "policy", "list", "--version", "4")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "EUR")
	r = invoke(ctx, e, "policy", "list", "--version", "3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "10,000.00 EUR", "version 3 reads back as it was")

	var actors []string
	rows, err := pool.Query(ctx, `SELECT event->>'actor' || ' ' || (event->>'via') FROM audit_events WHERE event->>'type' = 'approval_policy.changed' ORDER BY seq`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		actors = append(actors, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"ada cli", "ada cli", "ada cli", "ada cli", "ada cli"}, actors)
}

// policy set names a tier's deciders and its escalation; list shows who
// decides; a bad one is refused naming the field, writing nothing.
func TestPolicyCLIDecidersAndEscalation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	pool := storetest.PoolFor(t, url)
	e := env{"DATABASE_URL": url}
	for name, role := range map[string]identity.Role{"ada": identity.RoleAdmin, "bob": identity.RoleApprover, "cy": identity.RoleApprover} {
		_, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: role})
		require.NoError(t, err)
	}
	base := []string{"policy", "set", "--capability", "issue-invoice", "--currency", "EUR", "--min-amount", "0", "--approvers", "1", "--as", "ada"}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"escalation without deciders": {[]string{"--escalate-after", "1h", "--escalate-role", "admin"}, "escalation adds deciders"},
		"no such decider":             {[]string{"--deciders", "bob,ghost"}, `deciders.users "ghost" is no user`},
		"never due":                   {[]string{"--deciders", "bob", "--escalate-after", "80h", "--escalate-to", "cy"}, "escalation.after must be shorter"},
	} {
		r := invoke(ctx, e, append(base, tc.args...)...)
		require.Equal(t, 1, r.code, "%s: %s", name, r.stderr)
		require.Contains(t, r.stderr, tc.want, name)
		require.Equal(t, "approval policy version 1", policyVersion(t, e), "%s changed nothing", name)
	}
	r := invoke(ctx, e, append(base, "--deciders", "cy, bob", "--escalate-after", "24h", "--escalate-role", "admin")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "bob+cy, after 24h0m0s also admins")
	require.Contains(t, r.stdout, "anyone", "the other tiers")
}
