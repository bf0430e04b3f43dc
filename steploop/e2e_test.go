package steploop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestE2EWithTheAISDKClient drives POST /v1/chat with the real ai@7 client
// classes (e2e/chat.e2e.mjs) against the real openai-go path and a fake
// OpenAI-compatible model server.
func TestE2EWithTheAISDKClient(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("../e2e")
	require.NoError(t, err)
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the e2e test needs Node.js (20 or later) on PATH")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ai")); err != nil {
		npm, err := exec.LookPath("npm")
		require.NoError(t, err, "the e2e test needs npm to install e2e/node_modules")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci in e2e/: %s", out)
	}

	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "chat.e2e.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "INVOICED_URL="+b.URL, "INVOICED_TOKEN="+b.Token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node chat.e2e.mjs failed:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())

	var out struct {
		ApprovedToolCallID string `json:"approvedToolCallId"`
		DeniedToolCallID   string `json:"deniedToolCallId"`
		EditRefused        bool   `json:"editRefused"`
		ForgeRefused       bool   `json:"forgeRefused"`
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out), stdout.String())
	require.True(t, out.EditRefused)
	require.True(t, out.ForgeRefused)

	// Approved once, denied once, edited and forged calls never ran.
	require.Equal(t, 1, b.Reminders("alice"))
	require.Equal(t, 0, b.Reminders("mallory"))

	// Exactly one tool result for the approved call, and the model read
	// the denial as CONFIRMATION_INVALID denied.
	var approvedResults, deniedResults []string
	reqs := b.Model.Requests()
	lastReq := func(id string) []string {
		var found []string
		for _, r := range reqs {
			var here []string
			for _, m := range r.Messages {
				if m.Role == "tool" && m.ToolCallID == id {
					here = append(here, m.Content.(string))
				}
			}
			if len(here) > 0 {
				found = here
			}
		}
		return found
	}
	approvedResults = lastReq(out.ApprovedToolCallID)
	deniedResults = lastReq(out.DeniedToolCallID)
	require.Len(t, approvedResults, 1)
	require.JSONEq(t, `{"sent_to":"alice"}`, approvedResults[0])
	require.Len(t, deniedResults, 1)
	var denied struct {
		Error struct {
			Code   string `json:"code"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(deniedResults[0]), &denied))
	require.Equal(t, "CONFIRMATION_INVALID", denied.Error.Code)
	require.Equal(t, "denied", denied.Error.Reason)
	require.True(t, strings.Contains(deniedResults[0], "not today"), "the user's reason reaches the model")
}
