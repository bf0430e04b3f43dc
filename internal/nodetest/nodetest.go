// Package nodetest runs the Node.js drivers of end-to-end tests: it finds
// node and installs a driver folder's pinned packages once per test
// binary.
package nodetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	mu        sync.Mutex
	installed = map[string]bool{}
)

// Install returns the path of node and dir made absolute, with dir's
// node_modules installed from its lockfile (npm ci) unless probe, a path
// under node_modules, is already there. Tests running in parallel share
// one install.
func Install(t testing.TB, dir, probe string) (node, abs string) {
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
	if _, err := os.Stat(filepath.Join(abs, "node_modules", probe)); err != nil {
		npm, err := exec.LookPath("npm")
		require.NoError(t, err, "the e2e tests need npm to install %s/node_modules", dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = abs
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci in %s: %s", dir, out)
	}
	installed[abs] = true
	return node, abs
}
