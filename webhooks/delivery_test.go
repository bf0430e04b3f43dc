package webhooks_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/e2etest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/stretchr/testify/require"
)

// Done when: every delivery verifies with the standardwebhooks npm package
// (the receiver checks each one); the body is the versioned envelope whose
// id is the webhook-id.
func TestDeliveriesVerifyWithStandardWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{AllowPrivate: true, RetrySchedule: fast})
	rcv := e2etest.StartReceiver(t)
	ep := b.endpoint(t, rcv.URL, "approval.requested", "approval.decided", "invoice.issued")
	rcv.SetSecrets(t, ep.Secret)
	inv := b.issue(t)
	reqs := rcv.Wait(t, 3, 20*time.Second)
	time.Sleep(200 * time.Millisecond)
	reqs = rcv.Requests()
	require.Len(t, reqs, 3)
	types := map[string]e2etest.Request{}
	for _, r := range reqs {
		require.Equal(t, []int{0}, r.VerifiedWith, "not verified: %s", r.Error)
		require.Equal(t, 1, r.Signatures)
		env := parseEnvelope(t, r)
		require.Equal(t, r.ID, env.ID, "webhook-id is the event id")
		require.Equal(t, 1, env.Version)
		require.False(t, env.CreatedAt.IsZero())
		types[env.Type] = r
	}
	require.Contains(t, types, "approval.requested")
	require.Contains(t, types, "approval.decided")
	var issued invoices.Invoice
	require.NoError(t, json.Unmarshal(parseEnvelope(t, types["invoice.issued"]).Data, &issued))
	require.Equal(t, inv.ID, issued.ID)
	require.Equal(t, *inv.Number, *issued.Number)
}

// Done when: a receiver that answers 500 three times and then 200 gets the
// event once more, with the same webhook-id; every attempt is recorded.
func TestFailingReceiverGetsTheSameWebhookIDUntilItAccepts(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{AllowPrivate: true, RetrySchedule: fast})
	rcv := e2etest.StartReceiver(t, 500, 500, 500)
	ep := b.endpoint(t, rcv.URL, "invoice.issued")
	rcv.SetSecrets(t, ep.Secret)
	b.issue(t)
	d := b.waitDelivery(t, ep.ID.String(), webhooks.StatusDelivered)
	reqs := rcv.Requests()
	require.Len(t, reqs, 4)
	for i, r := range reqs {
		require.Equal(t, d.EventID.String(), r.ID, "request %d", i)
		require.Equal(t, []int{0}, r.VerifiedWith)
	}
	require.Equal(t, []int{500, 500, 500, 200}, []int{reqs[0].Status, reqs[1].Status, reqs[2].Status, reqs[3].Status})
	require.Len(t, d.Attempts, 4)
	for i, a := range d.Attempts {
		require.Equal(t, i+1, a.Attempt)
		require.NotNil(t, a.StatusCode)
		require.Empty(t, a.Error)
	}
	require.Equal(t, 500, *d.Attempts[0].StatusCode)
	require.Equal(t, "the receiver says no (500)", d.Attempts[0].ResponseHead)
	require.Equal(t, 200, *d.Attempts[3].StatusCode)
	require.Equal(t, "ok", d.Attempts[3].ResponseHead)
	require.NotNil(t, d.DeliveredAt)

	// The same delivery, read alone.
	r := b.h.Do(t, http.MethodGet, "/v1/webhook-deliveries/"+d.ID.String(), b.admin, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var one webhooks.Delivery
	r.JSON(t, &one)
	require.Len(t, one.Attempts, 4)

	// A manual redelivery sends the same event again, same id and body.
	r = b.h.Do(t, http.MethodPost, "/v1/webhook-deliveries/"+d.ID.String()+"/redeliver", b.admin, nil)
	require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
	reqs = rcv.Wait(t, 5, 20*time.Second)
	require.Equal(t, d.EventID.String(), reqs[4].ID)
	require.Equal(t, reqs[3].Envelope, reqs[4].Envelope)
	require.Eventually(t, func() bool {
		got := b.deliveries(t, ep.ID.String())
		return len(got[0].Attempts) == 5 && got[0].Status == webhooks.StatusDelivered
	}, 10*time.Second, 50*time.Millisecond)
}

// While a secret rotates, deliveries carry two signatures: a receiver
// holding either key verifies.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{AllowPrivate: true, RetrySchedule: fast})
	rcv := e2etest.StartReceiver(t)
	ep := b.endpoint(t, rcv.URL, "invoice.issued")
	r := b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints/"+ep.ID.String()+"/rotate-secret", b.admin, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var rotated struct {
		Secret              string    `json:"secret"`
		PreviousSecretUntil time.Time `json:"previous_secret_until"`
	}
	r.JSON(t, &rotated)
	require.NotEqual(t, ep.Secret, rotated.Secret)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), rotated.PreviousSecretUntil, time.Minute)
	rcv.SetSecrets(t, ep.Secret, rotated.Secret, "whsec_"+strings.Repeat("A", 43)+"=")
	b.issue(t)
	reqs := rcv.Wait(t, 1, 20*time.Second)
	require.Equal(t, 2, reqs[0].Signatures)
	require.Equal(t, []int{0, 1}, reqs[0].VerifiedWith, "both keys verify; a stranger's does not")
}

// The address check holds at delivery time too: an endpoint added while
// private targets were allowed is refused when they no longer are,
// without a request, and the refusal is recorded.
func TestDeliveryRefusesPrivateAddressesOnEveryConnection(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{RetrySchedule: fast})
	rcv := e2etest.StartReceiver(t)
	lenient := webhooks.NewService(b.h.Pool, b.h.App.Events(), webhooks.Config{AllowPrivate: true})
	ep, err := lenient.Add(b.ctx, b.adminUser.Principal(), "rest", rcv.URL, []string{"invoice.issued"})
	require.NoError(t, err)
	b.issue(t)
	var d webhooks.Delivery
	require.Eventually(t, func() bool {
		ds := b.deliveries(t, ep.ID.String())
		if len(ds) == 1 && len(ds[0].Attempts) > 0 {
			d = ds[0]
			return true
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	require.Nil(t, d.Attempts[0].StatusCode)
	require.Contains(t, d.Attempts[0].Error, "refused: the host resolves to a private, loopback or link-local address")
	require.NotContains(t, d.Attempts[0].Error, rcv.URL, "no URL in a recorded error")
	require.Empty(t, rcv.Requests())
}

// 410 Gone disables the endpoint at once, audits it and mails the admin
// who added it; later events make no delivery to it.
func TestGoneDisablesTheEndpointAndTellsItsOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{AllowPrivate: true, RetrySchedule: fast})
	rcv := e2etest.StartReceiver(t, 410)
	ep := b.endpoint(t, rcv.URL, "invoice.issued")
	b.issue(t)
	d := b.waitDelivery(t, ep.ID.String(), webhooks.StatusFailed)
	require.Len(t, d.Attempts, 1)
	b.requireDisabledAndOwnerTold(t, ep.ID.String(), "410 Gone")
	b.issue(t)
	time.Sleep(500 * time.Millisecond)
	require.Len(t, b.deliveries(t, ep.ID.String()), 1, "no delivery to a disabled endpoint")
	require.Len(t, rcv.Requests(), 1)
}

// A delivery that fails every attempt fails for good; when nothing reached
// the endpoint meanwhile, the endpoint is disabled and its owner told.
func TestFailingForGoodDisablesTheEndpointAndTellsItsOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, webhooks.Config{AllowPrivate: true, RetrySchedule: fast})
	rcv := e2etest.StartReceiver(t, 503, 503, 503, 503)
	ep := b.endpoint(t, rcv.URL, "invoice.issued")
	b.issue(t)
	d := b.waitDelivery(t, ep.ID.String(), webhooks.StatusFailed)
	require.Len(t, d.Attempts, 4, "the first try and one per step of the schedule")
	b.requireDisabledAndOwnerTold(t, ep.ID.String(), "no delivery to it succeeded")
}

func (b *bundle) requireDisabledAndOwnerTold(t *testing.T, id, reason string) {
	t.Helper()
	var ep webhooks.Endpoint
	require.Eventually(t, func() bool {
		r := b.h.Do(t, http.MethodGet, "/v1/webhook-endpoints/"+id, b.admin, nil)
		r.JSON(t, &ep)
		return !ep.Enabled
	}, 10*time.Second, 50*time.Millisecond)
	require.Contains(t, ep.DisabledReason, reason)
	// ada, an admin, is also mailed the approvals the issues needed.
	var told []mailtest.Received
	require.Eventually(t, func() bool {
		told = nil
		for _, m := range b.smtp.Messages() {
			if strings.HasPrefix(m.Subject, "Webhook endpoint disabled") {
				told = append(told, m)
			}
		}
		return len(told) > 0
	}, 20*time.Second, 50*time.Millisecond)
	require.Len(t, told, 1)
	require.Equal(t, []string{"ada@example.com"}, told[0].To)
	require.Equal(t, "Webhook endpoint disabled: 127.0.0.1", told[0].Subject)
	require.Contains(t, told[0].Text, reason)
	require.Contains(t, told[0].Text, id)
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_events
		WHERE type = 'webhook_endpoint.disabled' AND subject_id = $1 AND event->>'via' = 'system'`, id).Scan(&n))
	require.Equal(t, 1, n)
}
