package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/stretchr/testify/require"
)

// walkthroughMarker comes on the line before each README block the
// walkthrough runs.
const walkthroughMarker = "<!-- walkthrough"

// readmeWalkthrough returns the ```sh blocks of README.md that follow a
// walkthrough marker, in order.
func readmeWalkthrough(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var blocks []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), walkthroughMarker) {
			continue
		}
		require.True(t, sc.Scan() && sc.Text() == "```sh", "README.md: a walkthrough marker must come right before a ```sh block")
		var b strings.Builder
		for sc.Scan() && sc.Text() != "```" {
			b.WriteString(sc.Text() + "\n")
		}
		blocks = append(blocks, b.String())
	}
	require.NoError(t, sc.Err())
	return blocks
}

// ensureTool installs a Debian package when its command is missing and
// the test runs as root (as CI does); otherwise a missing one fails.
func ensureTool(t *testing.T, command, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(command); err == nil {
		return
	}
	require.Equal(t, 0, os.Geteuid(), "the README walkthrough needs %s (Debian package %s)", command, pkg)
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", pkg}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "apt-get %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestReadmeWalkthroughIssuesAnInvoice pastes the README's walkthrough
// into bash as a newcomer would, on a fresh `make run`, from the directory
// whose bin/invoiced make built: its setup and its first invoice, from
// customer to issued. Its requests reach the server through a proxy that
// holds them and their answers to openapi.yaml, as every in-process test
// server is (INVOICED_ADDR, which the walkthrough reads, names the proxy).
func TestReadmeWalkthroughIssuesAnInvoice(t *testing.T) {
	t.Parallel()
	ensureTool(t, "curl", "curl")
	ensureTool(t, "jq", "jq")
	blocks := readmeWalkthrough(t)
	require.GreaterOrEqual(t, len(blocks), 2, "README.md marks its setup and its first invoice as the walkthrough")

	mr := makeRun(t)
	target, err := url.Parse("http://" + mr.addr)
	require.NoError(t, err)
	proxy := httptest.NewServer(openapitest.Wrap(t, httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+strings.Join(blocks, ""))
	cmd.Dir = mr.dir
	cmd.Env = append(os.Environ(), "DATABASE_URL="+mr.dbURL, "INVOICED_ADDR="+strings.TrimPrefix(proxy.URL, "http://"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "the walkthrough failed:\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	_, err = os.Stat(filepath.Join(mr.dir, "bin", "invoiced"))
	require.NoError(t, err, "make run built bin/invoiced where the walkthrough ran")

	out := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.GreaterOrEqual(t, len(out), 2, stdout.String())
	require.Contains(t, stdout.String(), "created user alice with role clerk")
	// What the README's comments say the last two commands print.
	require.Equal(t, "approved", out[len(out)-2])
	require.Regexp(t, `^\{"number":"INV-\d{4}-000001","status":"issued","total":42840\}$`, out[len(out)-1])
}
