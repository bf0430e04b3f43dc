package app_test

import (
	"context"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

func TestMeReturnsThePrincipal(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	u, tok := h.User(t, "clara", identity.RoleClerk)
	resp := h.Do(t, "GET", "/v1/me", tok, nil)
	require.Equal(t, 200, resp.StatusCode, string(resp.Body))
	var me identity.User
	resp.JSON(t, &me)
	require.Equal(t, u.ID, me.ID)
	require.Equal(t, identity.RoleClerk, me.Role)
}

func TestBadCredentialsAre401WithChallenge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := apptest.New(t, apptest.Options{})
	_, revoked := h.User(t, "rex", identity.RoleAdmin)
	require.NoError(t, identity.TokenRevoke(ctx, h.Pool, revoked))
	disabledUser, disabled := h.User(t, "dora", identity.RoleApprover)
	require.NoError(t, identity.UserSetDisabled(ctx, h.Pool, disabledUser.ID, true))

	cases := map[string][]string{
		"missing token": nil,
		"unknown token": {"Authorization", "Bearer inv_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		"not a token":   {"Authorization", "Bearer hunter2"},
		"wrong scheme":  {"Authorization", "Basic YWxpY2U6c2VjcmV0"},
		"empty bearer":  {"Authorization", "Bearer "},
		"revoked token": {"Authorization", "Bearer " + revoked},
		"disabled user": {"Authorization", "Bearer " + disabled},
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			resp := h.Do(t, "GET", "/v1/me", "", nil, hdr...)
			require.Equal(t, 401, resp.StatusCode)
			require.Equal(t, `Bearer realm="invoiced"`, resp.Header.Get("WWW-Authenticate"))
			require.Equal(t, "UNAUTHENTICATED", resp.Problem(t)["code"])
		})
	}
	var used int
	require.NoError(t, h.Pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE last_used_at IS NOT NULL`).Scan(&used))
	require.Zero(t, used, "a refused request writes nothing")
}

func TestUnknownRouteAndMethodUnderV1(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	_, tok := h.User(t, "al", identity.RoleAdmin)
	resp := h.Do(t, "GET", "/v1/nothing-here", tok, nil)
	require.Equal(t, 404, resp.StatusCode)
	require.Equal(t, "NOT_FOUND", resp.Problem(t)["code"])
	resp = h.Do(t, "POST", "/v1/me", tok, `{}`)
	require.Equal(t, 405, resp.StatusCode)
	require.Equal(t, "METHOD_NOT_ALLOWED", resp.Problem(t)["code"])
	resp = h.Do(t, "GET", "/healthz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	resp = h.Do(t, "GET", "/readyz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
}
