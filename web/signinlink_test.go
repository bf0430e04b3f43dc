package web_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

// linkPage opens a sign-in link in br and returns the page.
func (br *browser) linkPage(secret string) page {
	br.t.Helper()
	return br.do(http.MethodGet, web.SignInLinkPath+"?token="+url.QueryEscape(secret), nil)
}

// useLink posts the set-password form of form (the page linkPage
// returned) with password typed twice as given.
func (br *browser) useLink(form page, secret, password, again string) page {
	br.t.Helper()
	return br.do(http.MethodPost, web.SignInLinkPath, url.Values{
		"csrf_token": {csrfOf(br.t, form)}, "token": {secret}, "password": {password}, "password_again": {again},
	})
}

func (b *bundle) link(t *testing.T, u *identity.User) string {
	t.Helper()
	secret, _, err := web.SignInLinkCreate(context.Background(), b.h.Pool, u.ID)
	require.NoError(t, err)
	return secret
}

// A sign-in link opens the page to choose a password; a password it
// refuses shows the form again with the link unused; the one chosen
// signs the browser in where the role's work is, and is the password
// from then on. The link then works no more.
func TestSignInLinkSetsThePasswordAndSignsIn(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var mu sync.Mutex
	b := &bundle{h: apptest.New(t, apptest.Options{Log: slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))})}
	clerk, _ := b.h.User(t, "cleo", identity.RoleClerk)
	secret := b.link(t, clerk)
	br := b.browser(t)

	form := br.linkPage(secret)
	require.Equal(t, http.StatusOK, form.status, form.body)
	require.Contains(t, form.body, "Choose a password")
	require.Contains(t, form.body, "<strong>cleo</strong>")
	require.Contains(t, form.body, `autocomplete="new-password"`)
	require.Equal(t, http.StatusOK, br.linkPage(secret).status, "opening the page uses nothing")

	p := br.useLink(form, secret, testPassword, testPassword+"x")
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, "The two passwords differ")
	p = br.useLink(form, secret, "short", "short")
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, "The password must be at least 12 characters.")

	p = br.useLink(form, secret, testPassword, testPassword)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/chat", p.header.Get("Location"), "a clerk lands on the chat")
	require.NotNil(t, br.cookie(web.SessionCookie))
	require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/chat", nil).status, "signed in")

	again := b.browser(t)
	gone := again.linkPage(secret)
	require.Equal(t, http.StatusGone, gone.status, "used once")
	require.Contains(t, gone.body, "ask an admin for a new one")
	require.Equal(t, http.StatusGone, again.useLink(again.do(http.MethodGet, "/login", nil), secret, testPassword, testPassword).status)
	require.Equal(t, http.StatusSeeOther, again.signIn("cleo", testPassword).status, "the password chosen signs in")

	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, logs.String(), `"path":"/login/link"`)
	require.NotContains(t, logs.String(), secret, "the link's secret is never logged")
}

// Only the SHA-256 of the link's secret is stored, and the link expires
// 15 minutes after it was made; an expired link neither opens the page
// nor sets a password.
func TestSignInLinkIsStoredHashedAndExpiresAfter15Minutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u := b.user(t, "ann", identity.RoleApprover)
	secret := b.link(t, u)

	var (
		hash []byte
		ttl  float64
	)
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT id_sha256, extract(epoch FROM expires_at - created_at) FROM signin_links WHERE user_id = $1`, u.ID).Scan(&hash, &ttl))
	sum := sha256.Sum256([]byte(secret))
	require.Equal(t, sum[:], hash)
	require.EqualValues(t, 15*60, ttl, "valid 15 minutes")

	br := b.browser(t)
	form := br.linkPage(secret)
	require.Equal(t, http.StatusOK, form.status)
	_, err := b.h.Pool.Exec(ctx, `UPDATE signin_links SET expires_at = now() - interval '1 second' WHERE user_id = $1`, u.ID)
	require.NoError(t, err)
	require.Equal(t, http.StatusGone, br.linkPage(secret).status)
	require.Equal(t, http.StatusGone, br.useLink(form, secret, "a brand new password", "a brand new password").status)
	require.Equal(t, http.StatusSeeOther, b.browser(t).signIn("ann", testPassword).status, "the password is unchanged")

	// Making a link sweeps the expired ones.
	b.link(t, u)
	var n int
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT count(*) FROM signin_links WHERE expires_at <= now()`).Scan(&n))
	require.Zero(t, n)
}

// Two uses of one link at once make one session: one browser is signed
// in, every other finds the link gone.
func TestSignInLinkUsedAtOnceMakesOneSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, _ := b.h.User(t, "ada", identity.RoleAdmin)
	secret := b.link(t, admin)
	const n = 6
	browsers := make([]*browser, n)
	forms := make([]page, n)
	for i := range browsers {
		browsers[i] = b.browser(t)
		forms[i] = browsers[i].linkPage(secret)
		require.Equal(t, http.StatusOK, forms[i].status)
	}
	statuses, locations := make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range browsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			p := browsers[i].useLink(forms[i], secret, testPassword, testPassword)
			statuses[i], locations[i] = p.status, p.header.Get("Location")
		}()
	}
	close(start)
	wg.Wait()
	seeOther, gone := 0, 0
	for i, s := range statuses {
		switch s {
		case http.StatusSeeOther:
			seeOther++
			require.Equal(t, "/inbox", locations[i], "an admin lands on the inbox")
		case http.StatusGone:
			gone++
		}
	}
	require.Equal(t, 1, seeOther, "%v", statuses)
	require.Equal(t, n-1, gone, "%v", statuses)
	var sessions int
	require.NoError(t, b.h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM web_sessions WHERE user_id = $1`, admin.ID).Scan(&sessions))
	require.Equal(t, 1, sessions)
}

// A link is refused, with nothing written, when it is not a link, when
// its user was disabled since, and when the form did not come from this
// site.
func TestSignInLinkRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	u, _ := b.h.User(t, "bea", identity.RoleApprover)
	secret := b.link(t, u)
	br := b.browser(t)
	form := br.linkPage(secret)
	require.Equal(t, http.StatusOK, form.status)

	for _, bad := range []string{"", "nope", strings.Repeat("x", 200), secret + "x"} {
		require.Equal(t, http.StatusGone, br.linkPage(bad).status, "%q", bad)
		require.Equal(t, http.StatusGone, br.useLink(form, bad, testPassword, testPassword).status, "%q", bad)
	}
	p := br.do(http.MethodPost, web.SignInLinkPath, url.Values{"csrf_token": {"forged"}, "token": {secret}, "password": {testPassword}, "password_again": {testPassword}})
	require.Equal(t, http.StatusForbidden, p.status)

	_, err := b.h.Pool.Exec(ctx, `UPDATE users SET disabled = true WHERE id = $1`, u.ID)
	require.NoError(t, err)
	require.Equal(t, http.StatusGone, br.linkPage(secret).status)
	require.Equal(t, http.StatusGone, br.useLink(form, secret, testPassword, testPassword).status)

	var hashSet bool
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT password_hash IS NOT NULL FROM users WHERE id = $1`, u.ID).Scan(&hashSet))
	require.False(t, hashSet, "no refusal set a password")
	var sessions int
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT count(*) FROM web_sessions`).Scan(&sessions))
	require.Zero(t, sessions)
}

// After sign-in each role lands where its work is, unless the sign-in
// was asked to return somewhere: a clerk on the chat, an approver and an
// admin on the inbox. / and /login send a signed-in browser there too.
func TestEachRoleLandsWhereItsWorkIs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	p := br.do(http.MethodGet, "/", nil)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/login", p.header.Get("Location"), "no session: sign in")

	for role, where := range map[identity.Role]string{
		identity.RoleClerk: "/chat", identity.RoleApprover: "/inbox", identity.RoleAdmin: "/inbox",
	} {
		name := "u" + string(role)
		b.user(t, name, role)
		br := b.browser(t)
		form := br.do(http.MethodGet, "/login", nil)
		require.Equal(t, http.StatusOK, form.status)
		require.Contains(t, form.body, `name="next" value=""`)
		p := br.do(http.MethodPost, "/login", url.Values{"csrf_token": {csrfOf(t, form)}, "username": {name}, "password": {testPassword}})
		require.Equal(t, http.StatusSeeOther, p.status, "%s: %s", role, p.body)
		require.Equal(t, where, p.header.Get("Location"), role)
		for _, path := range []string{"/", "/login"} {
			p = br.do(http.MethodGet, path, nil)
			require.Equal(t, http.StatusSeeOther, p.status, "%s %s", role, path)
			require.Equal(t, where, p.header.Get("Location"), "%s %s", role, path)
		}
		require.Equal(t, "/invoices", br.do(http.MethodGet, "/login?next=/invoices", nil).header.Get("Location"), "%s: next wins", role)

		other := b.browser(t)
		form = other.do(http.MethodGet, "/login?next=/invoices", nil)
		p = other.do(http.MethodPost, "/login", url.Values{"csrf_token": {csrfOf(t, form)}, "username": {name}, "password": {testPassword}, "next": {"/invoices"}})
		require.Equal(t, "/invoices", p.header.Get("Location"), "%s: a sign-in asked to return goes back", role)
		other2 := b.browser(t)
		form = other2.do(http.MethodGet, "/login", nil)
		p = other2.do(http.MethodPost, "/login", url.Values{"csrf_token": {csrfOf(t, form)}, "username": {name}, "password": {testPassword}, "next": {"//evil.example"}})
		require.Equal(t, where, p.header.Get("Location"), "%s: a next off the site is ignored", role)
	}
}

// lockedWriter lets the server's goroutines log into one buffer.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
