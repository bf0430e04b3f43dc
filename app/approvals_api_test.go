package app_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// Without ?limit= a page holds 20 approvals, as openapi.yaml's Limit says.
func TestApprovalListDefaultPageIs20(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	h.User(t, "bob", identity.RoleApprover)
	for i := range 21 {
		gateRequest(t, h, clerk, "issue-invoice", fmt.Sprintf("inv-%d", i), 100)
	}
	var page page.List[*approvals.Approval]
	resp := h.Do(t, "GET", "/v1/approvals", tok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	resp.JSON(t, &page)
	require.Len(t, page.Data, 20, "documented default page size is 20")
	require.True(t, page.HasMore)
}

// ?wait= must be between 0s and 60s, 422 otherwise: also a number of
// seconds so large it would wrap around to 0 if multiplied first.
func TestApprovalWaitOutOfRangeIsRefused(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)
	// 2^55 seconds: 2^55 * 1e9 ns wraps to exactly 0.
	for _, w := range []string{"36028797018963968", "61", "-1", "61s", "soon"} {
		resp := h.Do(t, "GET", "/v1/approvals/"+id+"?wait="+w, tok, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "wait=%s: %s", w, resp.Body)
	}
}

// A decision's reason holds up to 2,000 bytes, as openapi.yaml says.
func TestDecisionReasonLimitIsAsDocumented(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, _ := h.User(t, "clara", identity.RoleClerk)
	_, bobTok := h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)
	resp := h.Do(t, "POST", "/v1/approvals/"+id+"/deny", bobTok, map[string]string{"reason": strings.Repeat("x", 2001)})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/deny", bobTok, map[string]string{"reason": strings.Repeat("x", 2000)})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

// A decision's reason is text the requester reads: one that reorders
// what is shown or holds control characters is refused on approve and
// deny, and a deny reason must show something. Each is a 422 naming
// reason, with nothing written.
func TestDecisionReasonTextRefusedWritingNothing(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, _ := h.User(t, "clara", identity.RoleClerk)
	_, bobTok := h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)
	count := func(q string) int {
		var n int
		require.NoError(t, h.Pool.QueryRow(context.Background(), q).Scan(&n))
		return n
	}
	events := count(`SELECT count(*) FROM audit_events`)
	for _, tc := range []struct{ decision, reason string }{
		{"deny", "pay to IBAN \u202e1234"},     // right-to-left override
		{"deny", "\u2067wrong\u2069 customer"}, // an isolate
		{"deny", "wrong\x1b[2J customer"},      // a terminal escape
		{"deny", "\u200b\u200b"},               // shows nothing
		{"deny", "\ufe0f \u3164"},              // shows nothing
		{"approve", "ok \u202e"},
		{"approve", "fine\x07"},
	} {
		resp := h.Do(t, "POST", "/v1/approvals/"+id+"/"+tc.decision, bobTok, map[string]string{"reason": tc.reason})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%+q: %s", tc.reason, resp.Body)
		p := resp.Problem(t)
		require.Equal(t, problem.CodeValidation, p["code"])
		require.Equal(t, "reason", p["errors"].([]any)[0].(map[string]any)["field"], "%+q", tc.reason)
	}
	require.Equal(t, events, count(`SELECT count(*) FROM audit_events`))
	require.Zero(t, count(`SELECT count(*) FROM approval_decisions`))
	require.Equal(t, 1, count(`SELECT count(*) FROM approval_requests WHERE status = 'pending' AND version = 1`))

	resp := h.Do(t, "POST", "/v1/approvals/"+id+"/deny", bobTok, map[string]string{"reason": "Wrong customer.\n\tPlease fix محمد's address."})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A client that gives up on a long poll (closes the tab, its own timeout)
// is no server failure: no ERROR line, no 500 in the access log.
func TestAbandonedLongPollIsNotAServerError(t *testing.T) {
	t.Parallel()
	logs := &syncBuf{}
	h := apptest.New(t, apptest.Options{Log: slog.New(slog.NewJSONHandler(logs, nil))})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", h.URL+"/v1/approvals/"+id+"?wait=30s", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool { return waiting(h) }, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"msg":"request"`) }, 5*time.Second, 10*time.Millisecond)
	require.NotContains(t, logs.String(), `"level":"ERROR"`, "logs: %s", logs.String())
	require.NotContains(t, logs.String(), `"status":500`, "logs: %s", logs.String())
	require.Contains(t, logs.String(), "request abandoned by the client")
}

// DESIGN §5: every mutable row has a version, responses carry its ETag and
// If-Match is honoured: a decision made on a version the approver no longer
// sees is 412, nothing written.
func TestDecisionsAndCancelHonourIfMatch(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	clerk, tok := h.User(t, "clara", identity.RoleClerk)
	_, bobTok := h.User(t, "bob", identity.RoleApprover)
	id := gateRequest(t, h, clerk, "issue-invoice", "inv-1", 100)
	resp := h.Do(t, "GET", "/v1/approvals/"+id, tok, nil)
	require.Equal(t, `"1"`, resp.Header.Get("ETag"))
	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/approve", bobTok, nil, "If-Match", `"7"`)
	require.Equal(t, http.StatusPreconditionFailed, resp.StatusCode, "If-Match names version 7, the request is at 1: %s", resp.Body)
	require.Contains(t, string(resp.Body), "VERSION_MISMATCH")
	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/cancel", tok, nil, "If-Match", `"7"`)
	require.Equal(t, http.StatusPreconditionFailed, resp.StatusCode, string(resp.Body))
	resp = h.Do(t, "GET", "/v1/approvals/"+id, tok, nil)
	require.Contains(t, string(resp.Body), `"status":"pending"`, "nothing was written")

	resp = h.Do(t, "POST", "/v1/approvals/"+id+"/deny", bobTok, map[string]string{"reason": "no"}, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, `"2"`, resp.Header.Get("ETag"))

	id2 := gateRequest(t, h, clerk, "issue-invoice", "inv-2", 100)
	resp = h.Do(t, "POST", "/v1/approvals/"+id2+"/cancel", tok, nil, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	require.Equal(t, `"2"`, resp.Header.Get("ETag"))
}
