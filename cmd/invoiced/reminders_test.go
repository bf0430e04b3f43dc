package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/reminders"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// An admin turns automatic reminders on from `reminders show`'s JSON;
// a negative days_past_due is refused naming the field, a stale version
// and a non-admin are refused, and none of them writes anything.
func TestRemindersCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	pool := storetest.PoolFor(t, url)
	e := env{"DATABASE_URL": url}
	for name, role := range map[string]identity.Role{"ada": identity.RoleAdmin, "cleo": identity.RoleClerk} {
		_, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: role})
		require.NoError(t, err)
	}
	r := invoke(ctx, e, "reminders", "show")
	require.Equal(t, 0, r.code, r.stderr)
	shown := r.stdout
	var s reminders.Settings
	require.NoError(t, json.Unmarshal([]byte(shown), &s))
	require.False(t, s.Automatic)
	require.Equal(t, int64(1), s.Version)

	version := func() int64 {
		var v int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM reminder_settings`).Scan(&v))
		return v
	}
	for _, tc := range []struct {
		name, as, json, stderr string
	}{
		{"negative days", "ada", strings.Replace(shown, `"days_past_due": 7`, `"days_past_due": -7`, 1), "levels[0].days_past_due"},
		{"a clerk", "cleo", shown, "admin"},
		{"stale", "ada", strings.Replace(shown, `"version": 1`, `"version": 9`, 1), "changed since version 9"},
	} {
		r = invokeWithInput(ctx, e, tc.json, "reminders", "set", "--as", tc.as)
		require.NotEqual(t, 0, r.code, tc.name)
		require.Contains(t, r.stderr, tc.stderr, tc.name)
		require.Equal(t, int64(1), version(), tc.name)
	}

	r = invokeWithInput(ctx, e, strings.Replace(shown, `"automatic": false`, `"automatic": true`, 1), "reminders", "set", "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s))
	require.True(t, s.Automatic)
	require.Equal(t, int64(2), version())
	var audited int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE type = 'reminders.settings_changed' AND event->>'via' = 'cli'`).Scan(&audited))
	require.Equal(t, 1, audited)
}
