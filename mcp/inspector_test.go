package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/stretchr/testify/require"
)

// The MCP Inspector's CLI (pinned in e2e/mcp) lists what the server
// offers, and gives up on a bad token.
func TestInspectorListsToolsResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	node, dir := e2eNode(t)
	b := setup(t, app.Config{})
	// The inspector keeps its state under HOME.
	home := t.TempDir()
	inspect := func(token, method string) (map[string]any, int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules", ".bin", "inspector"),
			"--cli", b.h.URL+"/mcp", "--transport", "http", "--method", method,
			"--header", "Authorization: Bearer "+token, "--format", "json", "-q", "--stored-auth-only")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, exit.ExitCode(), stderr.String()
		}
		require.NoError(t, err, stderr.String())
		var out struct{ Result map[string]any }
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out), stdout.String())
		return out.Result, 0, stderr.String()
	}
	names := func(res map[string]any, list, key string) []string {
		var out []string
		for _, v := range res[list].([]any) {
			out = append(out, v.(map[string]any)[key].(string))
		}
		return out
	}

	res, code, stderr := inspect(b.clerk, "tools/list")
	require.Equal(t, 0, code, stderr)
	var want []string
	for _, d := range b.h.App.Capabilities().Descriptors() {
		want = append(want, d.Name)
	}
	require.ElementsMatch(t, want, names(res, "tools", "name"))

	res, code, stderr = inspect(b.clerk, "resources/list")
	require.Equal(t, 0, code, stderr)
	require.ElementsMatch(t, []string{"invoiced://invoices", "invoiced://customers", "invoiced://approvals"}, names(res, "resources", "uri"))

	res, code, stderr = inspect(b.clerk, "resources/templates/list")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, names(res, "resourceTemplates", "uriTemplate"), "invoiced://approvals/{approval_id}")

	res, code, stderr = inspect(b.approver, "prompts/list")
	require.Equal(t, 0, code, stderr)
	require.ElementsMatch(t, []string{"review-overdue-invoices", "prepare-monthly-drafts"}, names(res, "prompts", "name"))

	_, code, stderr = inspect("not-a-token", "tools/list")
	require.Equal(t, 3, code, "a refused token is the inspector's auth failure: %s", stderr)
	// It reports the token refused, not an OAuth flow to start, though
	// the 401 names this server's OAuth metadata (ADR-0023).
	require.Contains(t, stderr, `"code":"auth_required"`)
	require.Contains(t, stderr, "the bearer token is not valid")
}
