// Package e2etest runs the Node.js side of end-to-end tests: the pinned
// packages of e2e/ (installed once, across test processes) and the
// Standard Webhooks receiver.
package e2etest

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/stretchr/testify/require"
)

// required are packages of e2e/package.json the tests import: if one is
// missing, node_modules predates it and npm ci runs.
var required = []string{"ai/package.json", "standardwebhooks/package.json"}

// Dir is the e2e directory of the repository.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "e2e")
}

// Node returns Node.js and the e2e directory with its pinned node_modules
// installed.
func Node(t testing.TB) (node, dir string) {
	t.Helper()
	return nodetest.Install(t, Dir(t), required...)
}
