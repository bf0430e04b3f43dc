package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/e2etest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/stretchr/testify/require"
)

// fast is a compressed retry schedule: the first try and three retries
// within a second.
var fast = outbox.RetrySchedule{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}

type bundle struct {
	ctx                    context.Context
	h                      *apptest.Harness
	smtp                   *mailtest.Server
	admin, clerk, approver string
	adminUser              *identity.User
	customer               *invoices.Customer
}

// setup runs the service with cfg's webhook settings and mail on (the
// admin has an address, for the disabled-endpoint mail).
func setup(t *testing.T, cfg webhooks.Config) *bundle {
	t.Helper()
	srv := mailtest.Start(t)
	sender := srv.Sender(t, "invoiced@example.com")
	h := apptest.New(t, apptest.Options{Config: app.Config{
		Webhooks: cfg,
		Notify:   notify.Config{Sender: sender, PublicURL: "https://inv.example.com", Reminders: []notify.Reminder{}},
	}})
	b := &bundle{ctx: context.Background(), h: h, smtp: srv}
	b.adminUser, b.admin = h.User(t, "ada", identity.RoleAdmin)
	_, b.clerk = h.User(t, "cleo", identity.RoleClerk)
	_, b.approver = h.User(t, "abe", identity.RoleApprover)
	_, err := h.Pool.Exec(b.ctx, `UPDATE users SET email = 'ada@example.com' WHERE username = 'ada'`)
	require.NoError(t, err)
	b.customer = invoicetest.Customer(b.ctx, t, h.Pool, invoicetest.CustomerOpts{})
	return b
}

// endpoint adds an endpoint over the API and returns it with its secret.
func (b *bundle) endpoint(t *testing.T, url string, types ...string) webhooks.WithSecret {
	t.Helper()
	r := b.h.Do(t, http.MethodPost, "/v1/webhook-endpoints", b.admin, map[string]any{"url": url, "events": types})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var out struct {
		webhooks.Endpoint
		Secret string `json:"secret"`
	}
	r.JSON(t, &out)
	return webhooks.WithSecret{Endpoint: &out.Endpoint, Secret: out.Secret}
}

// issue drafts an invoice, has its issue approved and issues it.
func (b *bundle) issue(t *testing.T) *invoices.Invoice {
	t.Helper()
	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	path := "/v1/invoices/" + d.ID.String() + "/issue"
	r := b.h.Do(t, http.MethodPost, path, b.clerk, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	p := r.Problem(t)
	require.Equal(t, approvals.CodeApprovalRequired, p["code"])
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, path, b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var inv invoices.Invoice
	r.JSON(t, &inv)
	return &inv
}

// deliveries lists an endpoint's deliveries over the API.
func (b *bundle) deliveries(t *testing.T, endpoint string) []webhooks.Delivery {
	t.Helper()
	r := b.h.Do(t, http.MethodGet, "/v1/webhook-endpoints/"+endpoint+"/deliveries", b.admin, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var page struct{ Data []webhooks.Delivery }
	r.JSON(t, &page)
	return page.Data
}

// waitDelivery waits until the endpoint's only delivery has status.
func (b *bundle) waitDelivery(t *testing.T, endpoint, status string) webhooks.Delivery {
	t.Helper()
	var last []webhooks.Delivery
	require.Eventually(t, func() bool {
		last = b.deliveries(t, endpoint)
		return len(last) == 1 && last[0].Status == status
	}, 20*time.Second, 50*time.Millisecond, "deliveries: %+v", last)
	return last[0]
}

// envelope is a delivery body as the receiver parsed it.
type envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Version   int             `json:"version"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

func parseEnvelope(t *testing.T, r e2etest.Request) envelope {
	t.Helper()
	var e envelope
	require.NoError(t, json.Unmarshal(r.Envelope, &e))
	return e
}
