package identity_test

import (
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

func TestPasswordHashVerify(t *testing.T) {
	t.Parallel()
	h1, err := identity.PasswordHash("same password")
	require.NoError(t, err)
	h2, err := identity.PasswordHash("same password")
	require.NoError(t, err)
	require.NotEqual(t, h1, h2, "salted")
	ok, err := identity.PasswordVerify(h1, "same password")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = identity.PasswordVerify(h1, "same passwore")
	require.NoError(t, err)
	require.False(t, ok)
	for _, bad := range []string{"", "$2a$10$bcrypt", "$argon2id$v=19$m=0,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=1,t=1,p=1$!!$AAAA"} {
		_, err := identity.PasswordVerify(bad, "x")
		require.Error(t, err, bad)
	}
}
