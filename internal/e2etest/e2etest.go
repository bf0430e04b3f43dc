// Package e2etest runs the Node.js side of end-to-end tests: the pinned
// packages of e2e/ (installed once, across test processes) and the
// Standard Webhooks receiver.
package e2etest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	installMu sync.Mutex
	installed bool
)

// required are packages of e2e/package.json the tests import: if one is
// missing, node_modules predates it and npm ci runs.
var required = []string{"ai", "standardwebhooks"}

// Dir is the e2e directory of the repository.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "e2e")
}

// Node returns Node.js and the e2e directory with its pinned node_modules
// installed (npm ci, once: test binaries run in parallel processes, so the
// install holds a file lock).
func Node(t testing.TB) (node, dir string) {
	t.Helper()
	dir = Dir(t)
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the e2e tests need Node.js (20 or later) on PATH")
	installMu.Lock()
	defer installMu.Unlock()
	if installed {
		return node, dir
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "invoiced-e2e-npm.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if missing(dir) {
		npm, err := exec.LookPath("npm")
		require.NoError(t, err, "the e2e tests need npm to install e2e/node_modules")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci in e2e/: %s", out)
	}
	installed = true
	return node, dir
}

func missing(dir string) bool {
	for _, p := range required {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			return true
		}
	}
	return false
}
