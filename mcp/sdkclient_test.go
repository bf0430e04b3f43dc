package mcp_test

import (
	"context"
	"net/http"
	"testing"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// sdkSession connects the official Go SDK client to base/mcp as token,
// speaking the handshake protocol the endpoint serves (ADR-0015).
func sdkSession(t *testing.T, base, token string, opts *gomcp.ClientOptions) *gomcp.ClientSession {
	t.Helper()
	c := gomcp.NewClient(&gomcp.Implementation{Name: "go-sdk-test", Version: "0"}, opts)
	tr := &gomcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, &gomcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// bearer sends every request with a Bearer token, as a configured client
// does.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
