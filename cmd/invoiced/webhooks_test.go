package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The mail and webhook settings are refused at start by name: a bad SMTP
// URL (without repeating its password), SMTP without a sender or a public
// URL, a bad retry schedule, bad reminders.
func TestServeRefusesBadMailAndWebhookSettingsNamingThem(t *testing.T) {
	t.Parallel()
	db := "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"
	smtp := env{"INVOICED_SMTP_URL": "smtp://mail.example.com", "INVOICED_MAIL_FROM": "billing@example.com", "INVOICED_PUBLIC_URL": "https://inv.example.com"}
	with := func(extra env) env {
		e := env{"DATABASE_URL": db}
		for k, v := range smtp {
			e[k] = v
		}
		for k, v := range extra {
			e[k] = v
		}
		return e
	}
	for _, c := range []struct {
		e    env
		name string
	}{
		{with(env{"INVOICED_SMTP_URL": "http://u:hunter2@mail.example.com"}), "INVOICED_SMTP_URL"},
		{with(env{"INVOICED_MAIL_FROM": ""}), "INVOICED_MAIL_FROM"},
		{with(env{"INVOICED_MAIL_FROM": "not an address"}), "INVOICED_MAIL_FROM"},
		{with(env{"INVOICED_PUBLIC_URL": ""}), "INVOICED_PUBLIC_URL"},
		{with(env{"INVOICED_PUBLIC_URL": "invoices.example.com"}), "INVOICED_PUBLIC_URL"},
		{env{"DATABASE_URL": db, "INVOICED_WEBHOOK_RETRY_SCHEDULE": "5s,soon"}, "INVOICED_WEBHOOK_RETRY_SCHEDULE"},
		{env{"DATABASE_URL": db, "INVOICED_WEBHOOK_RETRY_SCHEDULE": "5s,0s"}, "INVOICED_WEBHOOK_RETRY_SCHEDULE"},
		{env{"DATABASE_URL": db, "INVOICED_WEBHOOKS_ALLOW_PRIVATE": "maybe"}, "INVOICED_WEBHOOKS_ALLOW_PRIVATE"},
		{env{"DATABASE_URL": db, "INVOICED_APPROVAL_REMINDERS": "often"}, "INVOICED_APPROVAL_REMINDERS"},
	} {
		r := invoke(context.Background(), c.e, "serve")
		require.Equal(t, 1, r.code, c.name)
		require.Contains(t, r.stderr, c.name)
		require.NotContains(t, r.stderr, "hunter2")
	}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// The CLI manages endpoints as a named admin: add prints the secret once,
// list shows the endpoint, disable and rotate-secret act and are audited
// (without the secret); a non-admin, a private target and an unknown event
// type are refused with nothing written.
func TestWebhooksCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	e := env{"DATABASE_URL": url}
	for _, u := range [][2]string{{"ada", "admin"}, {"cleo", "clerk"}} {
		require.Equal(t, 0, invoke(ctx, e, "users", "create", "--username", u[0], "--role", u[1]).code)
	}
	r := invoke(ctx, e, "webhooks", "add", "http://127.0.0.1:9/hook", "--events", "invoice.issued", "--as", "ada")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "private, loopback or link-local")
	r = invoke(ctx, e, "webhooks", "add", "https://hooks.example.com/x", "--events", "invoice.issued", "--as", "cleo")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "only admins")
	r = invoke(ctx, e, "webhooks", "add", "ftp://example.com/x", "--events", "invoice.issued", "--as", "ada")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "http or https")

	allow := env{"DATABASE_URL": url, "INVOICED_WEBHOOKS_ALLOW_PRIVATE": "true"}
	r = invoke(ctx, allow, "webhooks", "add", "http://127.0.0.1:9/hook", "--events", "invoice.issued,invoice.bogus", "--as", "ada")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "invoice.bogus")
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM webhook_endpoints`).Scan(&n))
	require.Zero(t, n, "every refusal wrote nothing")

	r = invoke(ctx, allow, "webhooks", "add", "http://127.0.0.1:9/hook?token=abc", "--events", "invoice.issued,invoice.paid", "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	secret := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(secret, "whsec_"), r.stdout)
	id := uuidRE.FindString(r.stdout)

	r = invoke(ctx, e, "webhooks", "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, id)
	require.Contains(t, r.stdout, "invoice.issued,invoice.paid")
	require.NotContains(t, r.stdout, secret)

	r = invoke(ctx, e, "webhooks", "rotate-secret", id, "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, secret)
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	rotated := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(rotated, "whsec_"))
	r = invoke(ctx, e, "webhooks", "disable", id, "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	r = invoke(ctx, e, "webhooks", "list")
	require.Contains(t, r.stdout, "disabled: disabled by ada")
	r = invoke(ctx, e, "webhooks", "deliveries", id)
	require.Equal(t, 0, r.code, r.stderr)

	var audited string
	require.NoError(t, conn.QueryRow(ctx, `SELECT string_agg(event::text, ' ' ORDER BY seq) FROM audit_events WHERE subject_type = 'webhook_endpoint'`).Scan(&audited))
	for _, typ := range []string{"webhook_endpoint.added", "webhook_endpoint.secret_rotated", "webhook_endpoint.disabled"} {
		require.Contains(t, audited, typ)
	}
	require.NotContains(t, audited, "whsec_", "no secret in the audit chain")
	require.NotContains(t, audited, "token=abc", "no receiver credential in the audit chain")
	require.Equal(t, 0, invoke(ctx, e, "audit", "verify").code)
}

func TestHelpOnWebhooksAndHealthcheck(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"webhooks", "--help"}, {"webhooks", "add", "--help"}, {"healthcheck", "--help"}} {
		r := invoke(context.Background(), env{}, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stdout+r.stderr)
	}
}

// Without INVOICED_SMTP_URL serve sends no mail and says so once, at start.
func TestServeSaysOnceThatMailIsOff(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := env{"DATABASE_URL": storetest.URL(t), "INVOICED_ADDR": addr}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- invoke(ctx, e, "serve") }()
	waitServeReady(t, addr)
	cancel()
	r := <-done
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, strings.Count(r.stdout, "no SMTP server, so no mail"), r.stdout)
	require.Equal(t, 1, strings.Count(r.stdout, "INVOICED_SMTP_URL"), "one line names the setting: %s", r.stdout)
}
