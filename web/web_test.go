package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

const testPassword = "correct horse battery staple"

type bundle struct {
	h *apptest.Harness
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{h: apptest.New(t, apptest.Options{})}
}

// user creates a user with role and a password.
func (b *bundle) user(t *testing.T, name string, role identity.Role) *identity.User {
	t.Helper()
	u, _ := b.h.User(t, name, role)
	require.NoError(t, identity.PasswordSet(context.Background(), b.h.Pool, name, testPassword))
	return u
}

// browser is a cookie-keeping client that does not follow redirects, so
// tests see each 303 the way a browser receives it.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	ip   string
	// header is sent with every request.
	header http.Header
}

func (b *bundle) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: b.h.URL, c: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (br *browser) do(method, path string, form url.Values) page {
	br.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, br.base+path, body)
	require.NoError(br.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if br.ip != "" {
		req.Header.Set("X-Forwarded-For", br.ip)
	}
	for k, v := range br.header {
		req.Header[k] = v
	}
	resp, err := br.c.Do(req)
	require.NoError(br.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(br.t, err)
	return page{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	require.NotNil(t, m, "no csrf_token in page:\n%s", p.body)
	return m[1]
}

// signIn posts the sign-in form as a browser would and returns the response.
func (br *browser) signIn(username, password string) page {
	br.t.Helper()
	form := br.do(http.MethodGet, "/login", nil)
	require.Equal(br.t, http.StatusOK, form.status)
	return br.do(http.MethodPost, "/login", url.Values{
		"csrf_token": {csrfOf(br.t, form)}, "username": {username}, "password": {password}, "next": {"/inbox"},
	})
}

func (br *browser) cookie(name string) *http.Cookie {
	u, _ := url.Parse(br.base)
	for _, c := range br.c.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestSignInStartsSessionWithSafeCookie(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)

	// Unauthenticated: the inbox sends the browser to sign in and back.
	p := br.do(http.MethodGet, "/inbox", nil)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/login?next=%2Finbox", p.header.Get("Location"))

	p = br.signIn("ann", testPassword)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/inbox", p.header.Get("Location"))
	var setCookie string
	for _, sc := range p.header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, web.SessionCookie+"=") {
			setCookie = sc
		}
	}
	require.Contains(t, setCookie, "HttpOnly")
	require.Contains(t, setCookie, "SameSite=Lax")
	require.NotContains(t, setCookie, "Secure", "plain HTTP without SecureCookies must not set Secure (the browser would drop it)")

	p = br.do(http.MethodGet, "/inbox", nil)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "ann")
	require.Contains(t, p.header.Get("Content-Security-Policy"), "script-src 'self'")
	require.Contains(t, p.header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.NotContains(t, p.header.Get("Content-Security-Policy"), "unsafe-inline")
	require.Equal(t, "DENY", p.header.Get("X-Frame-Options"))
	require.Equal(t, "same-origin", p.header.Get("Referrer-Policy"))
	require.NotContains(t, p.body, "<script>", "no inline script")

	// The session row holds a hash, never the cookie's value.
	var n int
	require.NoError(t, b.h.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM web_sessions WHERE id_sha256 = convert_to($1, 'UTF8')`, br.cookie(web.SessionCookie).Value).Scan(&n))
	require.Zero(t, n)
}

func TestSecureCookieBehindTLSProxy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	form := br.do(http.MethodGet, "/login", nil)
	req, err := http.NewRequest(http.MethodPost, b.h.URL+"/login", strings.NewReader(url.Values{
		"csrf_token": {csrfOf(t, form)}, "username": {"ann"}, "password": {testPassword},
	}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	for _, c := range br.c.Jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	resp, err := br.c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	found := false
	for _, sc := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, web.SessionCookie+"=") {
			found = true
			require.Contains(t, sc, "Secure")
		}
	}
	require.True(t, found)
}

func TestFormPostWithoutCSRFTokenIs403(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ann", testPassword).status)

	for _, form := range []url.Values{{}, {"csrf_token": {"forged"}}} {
		p := br.do(http.MethodPost, "/logout", form)
		require.Equal(t, http.StatusForbidden, p.status)
		require.Contains(t, p.header.Get("Content-Type"), "text/html")
		// Nothing happened: the session still works.
		require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/inbox", nil).status)
	}

	// The sign-in form is protected too (login CSRF): no token, no session.
	other := b.browser(t)
	p := other.do(http.MethodPost, "/login", url.Values{"username": {"ann"}, "password": {testPassword}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Nil(t, other.cookie(web.SessionCookie))
}

func TestWrongPasswordFiveTimesIsRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	for i := range 5 {
		p := br.signIn("ann", "wrong password "+fmt.Sprint(i))
		require.Equal(t, http.StatusUnauthorized, p.status, "attempt %d", i+1)
		require.Contains(t, p.body, "username or password is wrong")
	}
	// Now even the right password is refused until the window ends.
	p := br.signIn("ann", testPassword)
	require.Equal(t, http.StatusTooManyRequests, p.status)
	require.NotEmpty(t, p.header.Get("Retry-After"))
	require.Contains(t, p.body, "Too many sign-in attempts")
	require.Equal(t, 1, strings.Count(strings.ToLower(p.body), "too many sign-in attempts"), "said once: %s", p.body)
	require.Regexp(t, `try again in 1[56] minutes\.`, p.body)
	require.Nil(t, br.cookie(web.SessionCookie))

	// The limit is per username: another user from the same address signs in.
	b.user(t, "bob", identity.RoleClerk)
	require.Equal(t, http.StatusSeeOther, b.browser(t).signIn("bob", testPassword).status)
}

func TestRateLimitHoldsUnderConcurrentGuesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	const n = 16
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[int]int{}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := b.browser(t)
			p := br.signIn("ann", fmt.Sprintf("guess %d", i))
			mu.Lock()
			counts[p.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, map[int]int{http.StatusUnauthorized: 5, http.StatusTooManyRequests: n - 5}, counts)
}

func TestRateLimitPerIP(t *testing.T) {
	t.Parallel()
	cfg := web.DefaultConfig()
	cfg.LoginPerIP = web.ThrottleLimit{Attempts: 3, Window: cfg.LoginPerIP.Window}
	h := apptest.New(t, apptest.Options{Config: appConfig(cfg)})
	b := &bundle{h: h}
	for _, name := range []string{"u1", "u2", "u3", "u4"} {
		b.user(t, name, identity.RoleClerk)
	}
	statuses := []int{}
	for _, name := range []string{"u1", "u2", "u3", "u4"} {
		statuses = append(statuses, b.browser(t).signIn(name, "not it at all").status)
	}
	require.Equal(t, []int{401, 401, 401, 429}, statuses)
}

func TestSessionCookieAfterSignOutRedirectsToSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ann", testPassword).status)
	stolen := *br.cookie(web.SessionCookie)

	inbox := br.do(http.MethodGet, "/inbox", nil)
	p := br.do(http.MethodPost, "/logout", url.Values{"csrf_token": {csrfOf(t, inbox)}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/login?signed_out=1", p.header.Get("Location"))

	// A copy of the cookie kept from before sign-out no longer works.
	replay := b.browser(t)
	u, _ := url.Parse(b.h.URL)
	replay.c.Jar.SetCookies(u, []*http.Cookie{{Name: stolen.Name, Value: stolen.Value, Path: "/"}})
	p = replay.do(http.MethodGet, "/inbox", nil)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.True(t, strings.HasPrefix(p.header.Get("Location"), "/login"), p.header.Get("Location"))
	// And /v1 refuses it as well.
	p = replay.do(http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusUnauthorized, p.status)
}

func TestSessionIdleAndAbsoluteExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	ctx := context.Background()
	for _, tc := range []struct{ name, sql string }{
		{"idle", `UPDATE web_sessions SET last_seen_at = now() - interval '2 hours 1 minute'`},
		{"absolute", `UPDATE web_sessions SET expires_at = now() - interval '1 second'`},
	} {
		br := b.browser(t)
		require.Equal(t, http.StatusSeeOther, br.signIn("ann", testPassword).status)
		require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/inbox", nil).status)
		_, err := b.h.Pool.Exec(ctx, tc.sql)
		require.NoError(t, err)
		p := br.do(http.MethodGet, "/inbox", nil)
		require.Equal(t, http.StatusSeeOther, p.status, tc.name)
		require.True(t, strings.HasPrefix(p.header.Get("Location"), "/login"), tc.name)
		// The next sign-in sweeps the dead session away.
		require.Equal(t, http.StatusSeeOther, b.browser(t).signIn("ann", testPassword).status)
		var n int
		require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT count(*) FROM web_sessions`).Scan(&n))
		require.Equal(t, 1, n, tc.name)
		_, err = b.h.Pool.Exec(ctx, `DELETE FROM web_sessions`)
		require.NoError(t, err)
	}
}

func TestSessionCookieAuthenticatesV1(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ann", testPassword).status)
	p := br.do(http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `"username":"ann"`)

	// A disabled user's session stops working at once.
	u, err := identity.UserGetByUsername(context.Background(), b.h.Pool, "ann")
	require.NoError(t, err)
	require.NoError(t, identity.UserSetDisabled(context.Background(), b.h.Pool, u.ID, true))
	require.Equal(t, http.StatusUnauthorized, br.do(http.MethodGet, "/v1/me", nil).status)
	require.Equal(t, http.StatusSeeOther, br.do(http.MethodGet, "/inbox", nil).status)

	// Enabling them again does not bring the old session back.
	require.NoError(t, identity.UserSetDisabled(context.Background(), b.h.Pool, u.ID, false))
	require.Equal(t, http.StatusUnauthorized, br.do(http.MethodGet, "/v1/me", nil).status)
	var n int
	require.NoError(t, b.h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM web_sessions WHERE user_id = $1`, u.ID).Scan(&n))
	require.Zero(t, n)
}

func TestSignInRedirectStaysOnSite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	for _, next := range []string{"//evil.example/x", "https://evil.example/", `/\evil.example`, "javascript:alert(1)"} {
		br := b.browser(t)
		form := br.do(http.MethodGet, "/login", nil)
		p := br.do(http.MethodPost, "/login", url.Values{
			"csrf_token": {csrfOf(t, form)}, "username": {"ann"}, "password": {testPassword}, "next": {next},
		})
		require.Equal(t, http.StatusSeeOther, p.status)
		require.Equal(t, "/inbox", p.header.Get("Location"), next)
	}
}

func TestSignInRefusesBadCredentialsAlike(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	b.h.User(t, "nopass", identity.RoleApprover) // no password set: cannot sign in
	u := b.user(t, "gone", identity.RoleApprover)
	require.NoError(t, identity.UserSetDisabled(context.Background(), b.h.Pool, u.ID, true))
	for _, c := range []struct{ user, pass string }{
		{"ann", "wrong wrong wrong"}, {"nobody", testPassword}, {"nopass", testPassword}, {"gone", testPassword}, {"ANN", "wrong again, caps"},
	} {
		p := b.browser(t).signIn(c.user, c.pass)
		require.Equal(t, http.StatusUnauthorized, p.status, c.user)
		require.Contains(t, p.body, "The username or password is wrong.")
	}
	// Usernames are case-insensitive at sign-in (stored lowercase).
	require.Equal(t, http.StatusSeeOther, b.browser(t).signIn(" Ann ", testPassword).status)
}

func TestPasswordSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.user(t, "ann", identity.RoleApprover)
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ann", testPassword).status)

	require.Error(t, identity.PasswordSet(ctx, b.h.Pool, "ann", "short"))
	err := identity.PasswordSet(ctx, b.h.Pool, "nobody", testPassword+"!")
	require.Error(t, err)
	require.Contains(t, err.Error(), "NOT_FOUND")

	// A new password ends existing sessions and replaces the old one.
	require.NoError(t, identity.PasswordSet(ctx, b.h.Pool, "ann", "a brand new passphrase"))
	require.Equal(t, http.StatusSeeOther, br.do(http.MethodGet, "/inbox", nil).status)
	require.Equal(t, http.StatusUnauthorized, b.browser(t).signIn("ann", testPassword).status)
	require.Equal(t, http.StatusSeeOther, b.browser(t).signIn("ann", "a brand new passphrase").status)

	var hash string
	require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT password_hash FROM users WHERE username = 'ann'`).Scan(&hash))
	require.True(t, strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$"), hash)
}

func TestStaticAssetsAndNoInlineScript(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	p := br.do(http.MethodGet, "/login", nil)
	require.Equal(t, http.StatusOK, p.status)
	m := regexp.MustCompile(`href="(/static/app\.css\?v=[0-9a-f]+)"`).FindStringSubmatch(p.body)
	require.NotNil(t, m)
	css := br.do(http.MethodGet, m[1], nil)
	require.Equal(t, http.StatusOK, css.status)
	require.Contains(t, css.header.Get("Content-Type"), "text/css")
	require.Contains(t, css.header.Get("Cache-Control"), "immutable")
	require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/static/../web.go", nil).status)
	require.Equal(t, http.StatusNotFound, br.do(http.MethodGet, "/static/nope.js", nil).status)
}

// Only what the user does keeps a session from idling out: the inbox's
// own refresh after a live event (it says so in a header) and an event
// stream's request are not activity, so an unattended inbox tab signs out
// after the idle limit like any other.
func TestPassiveRequestsDoNotKeepASessionAlive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user(t, "ann", identity.RoleApprover)
	ctx := context.Background()
	br := b.browser(t)
	require.Equal(t, http.StatusSeeOther, br.signIn("ann", testPassword).status)
	lastSeen := func() time.Duration {
		var seen time.Time
		require.NoError(t, b.h.Pool.QueryRow(ctx, `SELECT last_seen_at FROM web_sessions`).Scan(&seen))
		return time.Since(seen)
	}
	age := func() {
		_, err := b.h.Pool.Exec(ctx, `UPDATE web_sessions SET last_seen_at = now() - interval '10 minutes'`)
		require.NoError(t, err)
	}

	age()
	br.header = http.Header{web.LiveRefreshHeader: {"1"}}
	require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/inbox", nil).status)
	require.Greater(t, lastSeen(), 9*time.Minute, "the live refresh did not touch the session")

	br.header = http.Header{"Accept": {"text/event-stream"}}
	require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/v1/me", nil).status)
	require.Greater(t, lastSeen(), 9*time.Minute, "a stream's request did not touch the session")

	br.header = nil
	require.Equal(t, http.StatusOK, br.do(http.MethodGet, "/inbox", nil).status)
	require.Less(t, lastSeen(), time.Minute, "the user's own request did")
}
