package webhooks_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/internal/e2etest"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/stretchr/testify/require"
)

// Only admins manage webhooks; each bad input is a problem naming its
// field; a private target is refused when added; nothing is written by a
// refusal.
func TestWebhookEndpointRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{})
	count := func() int {
		var n int
		require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM webhook_endpoints) + (SELECT count(*) FROM audit_events WHERE subject_type = 'webhook_endpoint')`).Scan(&n))
		return n
	}
	for _, c := range []struct {
		token  string
		body   any
		status int
		field  string
	}{
		{b.clerk, map[string]any{"url": "https://hooks.example.com/x", "events": []string{"invoice.issued"}}, http.StatusForbidden, ""},
		{b.approver, map[string]any{"url": "https://hooks.example.com/x", "events": []string{"invoice.issued"}}, http.StatusForbidden, ""},
		{b.admin, map[string]any{"url": "ftp://hooks.example.com/x", "events": []string{"invoice.issued"}}, http.StatusUnprocessableEntity, "url"},
		{b.admin, map[string]any{"url": "https://hooks.example.com/x#frag", "events": []string{"invoice.issued"}}, http.StatusUnprocessableEntity, "url"},
		{b.admin, map[string]any{"url": "", "events": []string{"invoice.issued"}}, http.StatusUnprocessableEntity, "url"},
		{b.admin, map[string]any{"url": "https://hooks.example.com/x", "events": []string{}}, http.StatusUnprocessableEntity, "events"},
		{b.admin, map[string]any{"url": "https://hooks.example.com/x", "events": []string{"invoice.exploded"}}, http.StatusUnprocessableEntity, "events"},
		{b.admin, map[string]any{"url": "http://127.0.0.1:8080/x", "events": []string{"invoice.issued"}}, http.StatusUnprocessableEntity, "url"},
		{b.admin, map[string]any{"url": "http://169.254.169.254/latest/meta-data", "events": []string{"invoice.issued"}}, http.StatusUnprocessableEntity, "url"},
		{b.admin, map[string]any{"url": "http://[::1]/x", "events": []string{"invoice.issued"}}, http.StatusUnprocessableEntity, "url"},
		{b.admin, map[string]any{"url": "http://localhost/x", "events": []string{"invoice.issued"}}, http.StatusUnprocessableEntity, "url"},
		{b.admin, map[string]any{"url": "https://hooks.example.com/x", "events": []string{"invoice.issued"}, "secret": "mine"}, http.StatusUnprocessableEntity, "secret"},
	} {
		r := b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints", c.token, c.body)
		require.Equal(t, c.status, r.StatusCode, "%v: %s", c.body, r.Body)
		p := r.Problem(t)
		if c.field != "" {
			errs, _ := p["errors"].([]any)
			require.NotEmpty(t, errs, "%s", r.Body)
			require.Equal(t, c.field, errs[0].(map[string]any)["field"], "%s", r.Body)
		}
	}
	require.Zero(t, count())
	// A public address is accepted (an IP literal: no DNS in the test).
	r := b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints", b.admin, map[string]any{"url": "https://1.1.1.1/hooks", "events": []string{"invoice.paid"}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	for _, path := range []string{"/v1/webhook-endpoints", "/v1/webhook-endpoints/" + b.adminUser.ID.String()} {
		r := b.h.Do(t, http.MethodGet, path, b.clerk, nil)
		require.Equal(t, http.StatusForbidden, r.StatusCode, path)
	}
	r = b.h.Do(t, http.MethodGet, "/v1/webhook-endpoints/"+b.adminUser.ID.String(), b.admin, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	r = b.h.Do(t, http.MethodPost, "/v1/webhook-deliveries/not-an-id/redeliver", b.admin, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
}

// An admin lists and reads endpoints (never their secrets), disables and
// enables one at the version it read (If-Match), and each change is
// audited.
func TestWebhookEndpointLifecycleOverTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{AllowPrivate: true})
	ep := b.endpoint(t, "http://127.0.0.1:9/a", "invoice.paid", "invoice.paid", "invoice.voided")
	require.Equal(t, []string{"invoice.paid", "invoice.voided"}, typeStrings(ep.Events), "a type listed twice is one subscription")
	r := b.h.Do(t, http.MethodGet, "/v1/webhook-endpoints", b.admin, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.NotContains(t, string(r.Body), ep.Secret)
	require.NotContains(t, string(r.Body), "whsec_")
	r = b.h.Do(t, http.MethodGet, "/v1/webhook-endpoints/"+ep.ID.String(), b.admin, nil)
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	require.NotContains(t, string(r.Body), "whsec_")

	r = b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints/"+ep.ID.String()+"/disable", b.admin, nil, "If-Match", `"7"`)
	require.Equal(t, http.StatusPreconditionFailed, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints/"+ep.ID.String()+"/disable", b.admin, nil, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var got webhooks.Endpoint
	r.JSON(t, &got)
	require.False(t, got.Enabled)
	require.Equal(t, "disabled by ada", got.DisabledReason)
	r = b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints/"+ep.ID.String()+"/enable", b.admin, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &got)
	require.True(t, got.Enabled)
	require.Equal(t, int64(3), got.Version)
	var types []string
	rows, err := b.h.Pool.Query(b.ctx, `SELECT event->>'type' FROM audit_events WHERE subject_id = $1 ORDER BY seq`, ep.ID.String())
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		types = append(types, s)
	}
	require.Equal(t, []string{"webhook_endpoint.added", "webhook_endpoint.disabled", "webhook_endpoint.enabled"}, types)
}

func typeStrings[T ~string](ts []T) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// Done when: two replicas on one database run each job once: every event
// reaches the receiver exactly once and no job needed a second attempt.
func TestTwoReplicasDeliverEachEventOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{AllowPrivate: true, RetrySchedule: fast})
	second, err := app.New(context.Background(), app.Config{Webhooks: webhooks.Config{AllowPrivate: true, RetrySchedule: fast}},
		storetest.PoolFor(t, b.h.DBURL), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(second.Close)
	rcv := e2etest.StartReceiver(t)
	ep := b.endpoint(t, rcv.URL, "invoice.issued", "approval.requested")
	rcv.SetSecrets(t, ep.Secret)
	const n = 12
	for range n {
		b.issue(t)
	}
	rcv.Wait(t, 2*n, 30*time.Second)
	time.Sleep(time.Second)
	seen := map[string]int{}
	for _, r := range rcv.Requests() {
		require.Equal(t, []int{0}, r.VerifiedWith)
		seen[r.ID]++
	}
	require.Len(t, seen, 2*n)
	for id, c := range seen {
		require.Equal(t, 1, c, "event %s delivered %d times", id, c)
	}
	var kinds, attempts int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(DISTINCT attempted_by[1]), max(attempt) FROM river_job
		WHERE kind = 'webhook.deliver'`).Scan(&kinds, &attempts))
	require.Equal(t, 1, attempts, "no job ran twice")
	require.Equal(t, 2, kinds, "both replicas worked jobs")
}
