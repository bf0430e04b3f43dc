package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// madeRun is a `make run` serving: where, its first admin's token and
// one-time sign-in link, its database, the directory whose bin/invoiced
// it built, and what it printed before serving.
type madeRun struct {
	addr, token, link, dbURL, dir string
	printed                       []string
}

// makeRun runs the README's `make run` the way a newcomer does, with the
// binary built under a directory of the test's own and a database that
// does not exist yet: make run creates it, migrates, creates the first
// admin, prints its token and serves. It returns once the service is
// ready; the test's end stops it and drops the database.
func makeRun(t *testing.T) *madeRun {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is required for this test: %v", err)
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	server := storetest.ServerURL(t)
	name := fmt.Sprintf("invoiced_makerun_%d", time.Now().UnixNano())
	// Through the tests' connection bound, as every other database's
	// (docs/testing.md): make run's server holds its pools for the test.
	dbURL := storetest.URLOf(t, name)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), server)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			conn.Close(context.Background())
		}
	})
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command("make", "--no-print-directory", "run", "BIN="+filepath.Join(dir, "bin", "invoiced"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "INVOICED_ADDR="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	var token, link string
	var log []string
	deadline := time.After(3 * time.Minute)
	// first-admin.sh's last line, after the token and the link.
	for len(log) == 0 || !strings.HasPrefix(log[len(log)-1], "A new sign-in link for a user:") {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "make run ended before saying where to sign in:\n%s", strings.Join(log, "\n"))
			log = append(log, l)
			switch {
			case strings.HasPrefix(l, "inv_"):
				token = l
			case strings.Contains(l, "/login/link?token="):
				link = l
			}
		case <-deadline:
			t.Fatalf("make run did not say where to sign in:\n%s", strings.Join(log, "\n"))
		}
	}
	require.NotEmpty(t, token, "make run printed the admin's token:\n%s", strings.Join(log, "\n"))
	go func() {
		for range lines {
		}
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, time.Minute, 100*time.Millisecond)
	return &madeRun{addr: addr, token: token, link: link, dbURL: dbURL, dir: dir, printed: log}
}

// TestMakeRunServesOnAFreshDatabase: make run on a database that does not
// exist yet serves; the token it prints works; the one-time link it
// prints opens the page to set the admin's password, which signs the
// browser in on the inbox, once; and it says where /inbox and /chat are.
func TestMakeRunServesOnAFreshDatabase(t *testing.T) {
	t.Parallel()
	mr := makeRun(t)
	site := "http://" + mr.addr
	req, _ := http.NewRequest("GET", site+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+mr.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "the printed admin token works")

	printed := strings.Join(mr.printed, "\n")
	require.Regexp(t, `^`+regexp.QuoteMeta(site)+`/login/link\?token=[A-Za-z0-9_-]{43}$`, mr.link, printed)
	require.Regexp(t, `sign-in link for admin \(admin\), to set a password; it works once, until \d\d:\d\d UTC:\n`+regexp.QuoteMeta(mr.link), printed)
	require.Contains(t, printed, "Open that link to choose the admin's password; it signs you in.")
	require.Contains(t, printed, "The inbox (approvers, admins): "+site+"/inbox")
	require.Contains(t, printed, "The chat (clerks, admins):     "+site+"/chat")
	require.Contains(t, printed, "A new sign-in link for a user: "+filepath.Join(mr.dir, "bin", "invoiced")+" users signin-link NAME")

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string) {
		resp, err := browser.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := get(mr.link)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "Choose a password")
	csrf := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, csrf, body)
	token := strings.TrimPrefix(mr.link, site+"/login/link?token=")
	resp, err = browser.PostForm(site+"/login/link", url.Values{"csrf_token": {csrf[1]}, "token": {token},
		"password": {"first admin's password"}, "password_again": {"first admin's password"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/inbox", resp.Header.Get("Location"), "an admin lands on the inbox")
	status, body = get(site + "/inbox")
	require.Equal(t, http.StatusOK, status, "signed in")
	require.Contains(t, body, "admin")
	status, _ = get(mr.link)
	require.Equal(t, http.StatusGone, status, "the link works once")
}

// make run listens on 127.0.0.1:8080 unless INVOICED_ADDR says otherwise:
// a stand-in for bin/invoiced (make -o build keeps it) prints the address
// each command gets, and first-admin.sh names it.
func TestMakeRunListensOnLoopback8080ByDefault(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	fake := filepath.Join(t.TempDir(), "invoiced")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho \"invoiced $1 got INVOICED_ADDR=$INVOICED_ADDR\"\n"), 0o755))
	dbURL := storetest.URL(t) // has the schema, and no user
	for _, tc := range []struct{ set, want string }{{"", "127.0.0.1:8080"}, {"127.0.0.1:9999", "127.0.0.1:9999"}} {
		cmd := exec.Command("make", "--no-print-directory", "-s", "-o", "build", "run", "BIN="+fake)
		cmd.Dir = root
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "INVOICED_ADDR=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "DATABASE_URL="+dbURL)
		if tc.set != "" {
			cmd.Env = append(cmd.Env, "INVOICED_ADDR="+tc.set)
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "invoiced serve got INVOICED_ADDR="+tc.want)
		require.Contains(t, string(out), "The inbox (approvers, admins): http://"+tc.want+"/inbox")
	}
}
