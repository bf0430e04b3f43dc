package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/stretchr/testify/require"
)

// docs/mcp.md's workaround for a client that cannot send an Authorization
// header holds: mcp-remote at the version the doc pins, with the
// doc's --header argument, bridges a stdio client to /mcp as the
// token's user.
func TestDocumentedBridgeForClientsWithoutHeaders(t *testing.T) {
	t.Parallel()
	node, dir := e2eNode(t)
	doc, err := os.ReadFile("../docs/mcp.md")
	require.NoError(t, err)
	var pkg struct{ Dependencies map[string]string }
	raw, err := os.ReadFile(dir + "/package.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &pkg))
	pinned := regexp.MustCompile(`"mcp-remote@([^"]+)"`).FindAllSubmatch(doc, -1)
	require.NotEmpty(t, pinned, "docs/mcp.md runs mcp-remote at a pinned version")
	for _, m := range pinned {
		require.Equal(t, pkg.Dependencies["mcp-remote"], string(m[1]), "docs/mcp.md pins the mcp-remote this test runs")
	}
	header := regexp.MustCompile(`"--header", "([^"]+)"`).FindSubmatch(doc)
	require.NotNil(t, header, "docs/mcp.md passes the token to mcp-remote with --header")
	require.Equal(t, "Authorization:${AUTH_HEADER}", string(header[1]))

	b := setup(t, app.Config{})
	draft := invoicetest.Draft(context.Background(), t, b.h.Pool, invoicetest.DraftOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "bridge.e2e.mjs")
	cmd.Dir = dir
	// mcp-remote keeps its state under HOME.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "INVOICED_MCP_URL="+b.h.URL, "INVOICED_CLERK_TOKEN="+b.clerk,
		"INVOICED_DRAFT_ID="+draft.ID.String(), "INVOICED_BRIDGE_HEADER="+string(header[1]))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Run(), "node bridge.e2e.mjs failed:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	var out struct {
		Server  string
		Tools   []string
		Invoice map[string]any
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out), stdout.String())
	require.Equal(t, "invoiced", out.Server)
	var want []string
	for _, d := range b.h.App.Capabilities().Descriptors() {
		want = append(want, d.Name)
	}
	require.ElementsMatch(t, want, out.Tools, "a clerk's tools: the bridge sent the token")
	require.Equal(t, draft.ID.String(), out.Invoice["id"])
}
