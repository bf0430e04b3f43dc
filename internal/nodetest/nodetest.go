// Package nodetest runs the Node.js drivers of end-to-end tests: it finds
// node and installs a driver folder's pinned packages once, across the
// test binaries `go test ./...` runs in parallel.
package nodetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// CIFlags are npm ci's flags here and in the Makefile's node-deps. npm
// waits 5 minutes for a stalled fetch by default, as long as a test
// allows the whole install; 30 s and four retries let one stalled
// connection cost a minute or two instead of the run.
var CIFlags = []string{"ci", "--no-audit", "--no-fund", "--loglevel=error", "--fetch-timeout=30000", "--fetch-retries=4"}

var (
	mu        sync.Mutex
	installed = map[string]bool{}
)

// Install returns the path of node and dir made absolute, with dir's
// node_modules installed from its lockfile (npm ci) unless every probe, a
// path under node_modules, is already there (`make test` installs them
// first: see the Makefile's node-deps). Test binaries running in parallel
// share one install: it holds a file lock.
func Install(t testing.TB, dir string, probes ...string) (node, abs string) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	node, err = exec.LookPath("node")
	require.NoError(t, err, "the e2e tests need Node.js (20 or later) on PATH")
	mu.Lock()
	defer mu.Unlock()
	if installed[abs] {
		return node, abs
	}
	sum := sha256.Sum256([]byte(abs))
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "invoiced-npm-"+hex.EncodeToString(sum[:8])+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if missing(abs, probes) {
		npm, err := exec.LookPath("npm")
		require.NoError(t, err, "the e2e tests need npm to install %s/node_modules", dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, CIFlags...)
		cmd.Dir = abs
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci in %s: %s", dir, out)
	}
	installed[abs] = true
	return node, abs
}

func missing(dir string, probes []string) bool {
	for _, p := range probes {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
			return true
		}
	}
	return false
}
