package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/debtest"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/oauth"
	"github.com/stretchr/testify/require"
)

// oauthOut is what e2e/mcp/oauth.e2e.mjs saw.
type oauthOut struct {
	Authorize map[string]string
	ClientID  string
	Consent   struct {
		Client, RedirectHost string
		WriteChecked         bool
	}
	Back struct {
		State, Iss string
		HasCode    bool
	}
	Scope             string
	Tools             []string
	Listed            map[string]any
	ToolsAfterRefresh int
	AfterRevoke       struct {
		Status          int
		WWWAuthenticate string
	}
}

// TestOAuthWithTheTypeScriptSDK: the official TypeScript SDK's OAuth
// client, from only the server's URL, registers (dynamically, or by its
// metadata document), has its user consent in Chromium, calls tools,
// refreshes and is revoked (ADR-0023).
func TestOAuthWithTheTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node, dir := nodetest.Install(t, "../e2e/mcp", "mcp-remote/package.json", "playwright-core/package.json")
	debtest.Command(t, "/usr/bin/chromium", "chromium", "fonts-dejavu-core")
	// The client's metadata document, on https as the draft requires; the
	// server fetches it with a client that trusts this test's certificate.
	mux := http.NewServeMux()
	docs := httptest.NewTLSServer(mux)
	t.Cleanup(docs.Close)
	docURL := docs.URL + "/invoiced-e2e/client.json"
	mux.HandleFunc("/invoiced-e2e/client.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"client_id": "`+docURL+`", "client_name": "invoiced e2e agent",
			"redirect_uris": ["http://127.0.0.1/callback"], "token_endpoint_auth_method": "none"}`)
	})
	h := apptest.New(t, apptest.Options{Config: app.Config{OAuth: oauth.Config{ClientDocuments: docs.Client()}}})
	clerk, _ := h.User(t, "clerk", identity.RoleClerk)
	const password = "correct horse battery"
	require.NoError(t, identity.PasswordSet(context.Background(), h.Pool, clerk.Username, password))

	for _, way := range []struct{ name, document string }{{"dynamic registration", ""}, {"client metadata document", docURL}} {
		t.Run(way.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "oauth.e2e.mjs"))
			cmd.Dir = dir
			// The consent page's screenshot goes to the test's artifact
			// directory (go test -artifacts keeps it).
			cmd.Env = append(os.Environ(), "INVOICED_URL="+h.URL, "INVOICED_USERNAME=clerk", "INVOICED_PASSWORD="+password,
				"INVOICED_CLIENT_DOCUMENT="+way.document, "INVOICED_SCREENSHOTS="+t.ArtifactDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), stderr.String())
			var out oauthOut
			require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out), stdout.String())

			require.Equal(t, "S256", out.Authorize["code_challenge_method"])
			require.Equal(t, h.URL+"/mcp", out.Authorize["resource"])
			require.Equal(t, "read write", out.Authorize["scope"])
			if way.document != "" {
				require.Equal(t, docURL, out.ClientID)
			} else {
				require.True(t, strings.HasPrefix(out.ClientID, "ioc_"), out.ClientID)
			}
			require.Equal(t, "invoiced e2e agent", out.Consent.Client)
			require.Equal(t, "127.0.0.1", strings.Split(out.Consent.RedirectHost, ":")[0])
			require.True(t, out.Consent.WriteChecked)
			require.Equal(t, h.URL, out.Back.Iss)
			require.Equal(t, "read write", out.Scope)
			require.Contains(t, out.Tools, "list-invoices")
			require.Contains(t, out.Tools, "create-customer")
			require.Len(t, out.Tools, out.ToolsAfterRefresh)
			require.Equal(t, http.StatusUnauthorized, out.AfterRevoke.Status)
			require.Contains(t, out.AfterRevoke.WWWAuthenticate, `error="invalid_token"`)
			require.Contains(t, out.AfterRevoke.WWWAuthenticate, `resource_metadata="`+h.URL+`/.well-known/oauth-protected-resource/mcp"`)

			// The grant is the clerk's, named after the client, revoked.
			var name string
			var revoked bool
			require.NoError(t, h.Pool.QueryRow(context.Background(), `SELECT name, revoked_at IS NOT NULL FROM api_tokens
				WHERE user_id = $1 AND oauth_client_id = $2`, clerk.ID, out.ClientID).Scan(&name, &revoked))
			require.Equal(t, "invoiced e2e agent", name)
			require.True(t, revoked)
		})
	}
}
