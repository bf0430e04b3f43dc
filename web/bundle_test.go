package web_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChatBundleIsBuiltFromItsSources rebuilds static/chat.js the way
// `make chat-bundle` does, from a copy of web/chat: npm ci from its
// lockfile, then build.mjs with its fixed flags. The committed bundle
// must be exactly what the sources and the pinned packages make, so what
// `make run` serves without Node is what a reviewer can read.
func TestChatBundleIsBuiltFromItsSources(t *testing.T) {
	t.Parallel()
	npm, err := exec.LookPath("npm")
	require.NoError(t, err, "rebuilding the chat bundle needs Node.js and npm on PATH")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "src"), os.DirFS("chat/src")))
	for _, f := range []string{"package.json", "package-lock.json", "build.mjs"} {
		b, err := os.ReadFile(filepath.Join("chat", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --ignore-scripts: esbuild's JavaScript API finds its platform
	// package's binary without its install script.
	run := func(name string, args ...string) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
	}
	run(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	out := filepath.Join(dir, "chat.js")
	run("node", "build.mjs", out)

	built, err := os.ReadFile(out)
	require.NoError(t, err)
	committed, err := os.ReadFile("static/chat.js")
	require.NoError(t, err)
	require.True(t, bytes.Equal(built, committed),
		"static/chat.js is not what web/chat builds (%d bytes built, %d committed): run `make chat-bundle` and commit the result", len(built), len(committed))
}
