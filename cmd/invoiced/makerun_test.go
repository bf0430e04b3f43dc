package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// madeRun is a `make run` serving: where, its first admin's token, its
// database, and the directory whose bin/invoiced it built.
type madeRun struct {
	addr, token, dbURL, dir string
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
	dbURL := storetest.WithDatabase(server, name)
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

	var token string
	var log []string
	deadline := time.After(3 * time.Minute)
	for token == "" {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "make run ended before printing a token:\n%s", strings.Join(log, "\n"))
			log = append(log, l)
			if strings.HasPrefix(l, "inv_") {
				token = l
			}
		case <-deadline:
			t.Fatalf("no token from make run:\n%s", strings.Join(log, "\n"))
		}
	}
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
	return &madeRun{addr: addr, token: token, dbURL: dbURL, dir: dir}
}

// TestMakeRunServesOnAFreshDatabase: make run on a database that does not
// exist yet serves, and the token it prints works.
func TestMakeRunServesOnAFreshDatabase(t *testing.T) {
	t.Parallel()
	mr := makeRun(t)
	req, _ := http.NewRequest("GET", "http://"+mr.addr+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+mr.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "the printed admin token works")
}
