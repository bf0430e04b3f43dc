package identity_test

import (
	"context"
	"os"
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// A display name is shown to other users (an approver sees who asked), so
// one that shows nothing or reorders what is shown is refused naming
// display_name, and no user is created; none given is the username.
func TestUserCreateDisplayName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.Tx(t)
	for _, bad := range []string{"   ", "\u200b", "\u202eadmin", "Ann\u200f", "Ann\nBob", "\u3164"} {
		_, err := identity.UserCreate(ctx, db, identity.UserCreateParams{Username: "ann", DisplayName: bad, Role: identity.RoleClerk})
		p, ok := problem.As(err)
		require.True(t, ok, "%+q: %v", bad, err)
		require.Equal(t, problem.CodeValidation, p.Code, "%+q", bad)
		require.Equal(t, "display_name", p.Errors[0].Field, "%+q", bad)
		var n int
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n))
		require.Zero(t, n, "%+q", bad)
	}
	u, err := identity.UserCreate(ctx, db, identity.UserCreateParams{Username: "ann", DisplayName: "  Ann Müller ", Role: identity.RoleClerk})
	require.NoError(t, err)
	require.Equal(t, "Ann Müller", u.DisplayName)
	u, err = identity.UserCreate(ctx, db, identity.UserCreateParams{Username: "bob", Role: identity.RoleClerk})
	require.NoError(t, err)
	require.Equal(t, "bob", u.DisplayName)
}
