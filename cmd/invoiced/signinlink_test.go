package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// users signin-link prints, alone on its last line, a one-time link on
// the address serve listens on (or INVOICED_PUBLIC_URL) that opens the
// user's set-password page; a user who could not use it gets none.
func TestUsersSignInLinkPrintsALinkThatOpensThePasswordPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := freeAddr(t)
	e := env{"DATABASE_URL": storetest.URL(t), "INVOICED_ADDR": addr, "INVOICED_LOG_LEVEL": "error"}
	require.Equal(t, 0, invoke(ctx, e, "users", "create", "--username", "cleo", "--role", "clerk").code)

	r := invoke(ctx, e, "users", "signin-link", "cleo")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Len(t, lines, 2, r.stdout)
	require.Regexp(t, `^sign-in link for cleo \(clerk\), to set a password; it works once, until \d\d:\d\d UTC:$`, lines[0])
	link := lines[1]
	require.Regexp(t, `^http://`+addr+`/login/link\?token=[A-Za-z0-9_-]{43}$`, link)

	serving(t, e)
	resp, err := http.Get(link)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "<strong>cleo</strong>")

	for _, tc := range []struct{ public, want string }{
		{"https://invoices.example.com/", "https://invoices.example.com/login/link?token="},
		{"", "http://127.0.0.1:" + strings.Split(addr, ":")[1] + "/login/link?token="},
	} {
		e := env{"DATABASE_URL": e["DATABASE_URL"], "INVOICED_PUBLIC_URL": tc.public, "INVOICED_ADDR": ":" + strings.Split(addr, ":")[1]}
		r := invoke(ctx, e, "users", "signin-link", "cleo")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "\n"+tc.want)
	}

	r = invoke(ctx, e, "users", "signin-link", "nobody")
	oneLine(t, r, "not found")
	require.Equal(t, 0, invoke(ctx, e, "users", "disable", "cleo").code)
	oneLine(t, invoke(ctx, e, "users", "signin-link", "cleo"), "invoiced: cleo is disabled, and a link would not sign them in: enable them first")
	r = invoke(ctx, e, "users", "signin-link")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "invoiced users signin-link: name one user, for example: invoiced users signin-link alice")
}
