package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/jackc/pgx/v5/pgxpool"
)

const webhooksUsage = `Usage:
  invoiced webhooks add URL --events TYPE[,TYPE…] --as ADMIN
  invoiced webhooks list
  invoiced webhooks disable|enable|rotate-secret ENDPOINT_ID --as ADMIN
  invoiced webhooks deliveries ENDPOINT_ID [--limit N]
  invoiced webhooks redeliver DELIVERY_ID --as ADMIN`

func cmdWebhooks(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "webhooks", args, webhooksUsage)
	}
	switch args[0] {
	case "add":
		return cmdWebhooksAdd(ctx, e, args[1:], stdout, stderr)
	case "list":
		return cmdWebhooksList(ctx, e, args[1:], stdout, stderr)
	case "disable", "enable", "rotate-secret", "redeliver":
		return cmdWebhooksAct(ctx, e, args[0], args[1:], stdout, stderr)
	case "deliveries":
		return cmdWebhooksDeliveries(ctx, e, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, webhooksUsage)
		return nil
	}
	return subcommandError(stderr, "webhooks", args, webhooksUsage)
}

// webhookSettings reads INVOICED_WEBHOOKS_ALLOW_PRIVATE and
// INVOICED_WEBHOOK_RETRY_SCHEDULE (serve and the CLI alike).
func webhookSettings(e env) (webhooks.Config, error) {
	var c webhooks.Config
	var err error
	if c.AllowPrivate, err = boolSetting(e, "INVOICED_WEBHOOKS_ALLOW_PRIVATE"); err != nil {
		return c, err
	}
	if v := e.get("INVOICED_WEBHOOK_RETRY_SCHEDULE", ""); v != "" {
		if c.RetrySchedule, err = outbox.ParseRetrySchedule(v); err != nil {
			return c, fmt.Errorf("INVOICED_WEBHOOK_RETRY_SCHEDULE must be comma-separated durations such as 5s,5m,30m: %w", err)
		}
	}
	return c, nil
}

// webhooksCLI opens the database and the admin service, and finds the
// acting admin when as names one.
func webhooksCLI(ctx context.Context, e env, as string) (*webhooks.Service, *pgxpool.Pool, identity.Principal, error) {
	cfg, err := webhookSettings(e)
	if err != nil {
		return nil, nil, identity.Principal{}, err
	}
	emit, err := app.NewEmitter(nil)
	if err != nil {
		return nil, nil, identity.Principal{}, err
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return nil, nil, identity.Principal{}, err
	}
	// Listing needs an admin's view, not an actor: the CLI is ops.
	p := identity.Principal{Role: identity.RoleAdmin, Username: "cli"}
	if as != "" {
		u, err := identity.UserGetByUsername(ctx, pool, as)
		if err != nil {
			pool.Close()
			return nil, nil, p, err
		}
		if u.Disabled {
			pool.Close()
			return nil, nil, p, problem.Forbidden("user " + as + " is disabled")
		}
		p = u.Principal()
	}
	return webhooks.NewService(pool, emit, cfg), pool, p, nil
}

// argName is the positional argument fs's synopsis names: URL,
// ENDPOINT_ID, DELIVERY_ID.
func argName(fs *flag.FlagSet) string {
	for _, w := range strings.Fields(fs.Name()) {
		if w == strings.ToUpper(w) && !strings.HasPrefix(w, "-") {
			return w
		}
	}
	return "the argument"
}

// parseOneArg parses flags before and after one positional argument.
func parseOneArg(fs *flag.FlagSet, args []string) (string, error) {
	if err := parse(fs, args); err != nil {
		return "", err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return "", usageError(fs, "%s is missing", argName(fs))
	}
	arg := rest[0]
	if err := parse(fs, rest[1:]); err != nil {
		return "", err
	}
	if len(fs.Args()) != 0 {
		return "", usageError(fs, "it takes one %s, then flags; %q is one too many", argName(fs), fs.Arg(0))
	}
	return arg, nil
}

func cmdWebhooksAdd(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("webhooks add URL --events TYPE[,TYPE…] --as ADMIN",
		"Add a webhook endpoint and print its signing secret, shown once.", stderr)
	evs := fs.String("events", "", "comma-separated event types, e.g. invoice.issued,invoice.paid (required)")
	as := fs.String("as", "", "username of the admin adding it, who is told if it is disabled (required)")
	url, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	if missing := missingFlags("--events", *evs, "--as", *as); missing != "" {
		return usageError(fs, "%s, for example: invoiced webhooks add https://erp.example.com/hooks --events invoice.issued --as ada", missing)
	}
	svc, pool, p, err := webhooksCLI(ctx, e, *as)
	if err != nil {
		return err
	}
	defer pool.Close()
	ep, err := svc.Add(ctx, p, capability.PathCLI, url, strings.Split(*evs, ","))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "added webhook endpoint %s for %s; its signing secret (shown once):\n%s\n",
		ep.ID, strings.Join(typeNames(ep.Events), ","), ep.Secret)
	return nil
}

func typeNames[T ~string](ts []T) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func cmdWebhooksList(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("webhooks list", "List webhook endpoints, newest first.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	svc, pool, p, err := webhooksCLI(ctx, e, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	list, err := svc.List(ctx, p, page.Request{Limit: page.MaxLimit})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tEVENTS\tSTATE")
	for _, ep := range list.Data {
		state := "enabled"
		if !ep.Enabled {
			state = "disabled: " + ep.DisabledReason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ep.ID, ep.URL, strings.Join(typeNames(ep.Events), ","), state)
	}
	return tw.Flush()
}

func cmdWebhooksAct(ctx context.Context, e env, action string, args []string, stdout, stderr io.Writer) error {
	what := "ENDPOINT_ID"
	if action == "redeliver" {
		what = "DELIVERY_ID"
	}
	fs := flagSet("webhooks "+action+" "+what+" --as ADMIN", "Act on a webhook endpoint or delivery as a named admin.", stderr)
	as := fs.String("as", "", "username of the admin acting (required)")
	arg, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	if *as == "" {
		return usageError(fs, "--as is required: the username of the admin acting, as in --as ada")
	}
	id, err := uuid.Parse(arg)
	if err != nil {
		return problem.NotFound(strings.ToLower(strings.ReplaceAll(what, "_ID", "")) + " " + arg)
	}
	svc, pool, p, err := webhooksCLI(ctx, e, *as)
	if err != nil {
		return err
	}
	defer pool.Close()
	switch action {
	case "disable", "enable":
		ep, err := svc.SetEnabled(ctx, p, capability.PathCLI, id, etag.IfMatch{}, action == "enable")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "webhook endpoint %s is %sd\n", ep.ID, action)
	case "rotate-secret":
		ep, err := svc.RotateSecret(ctx, p, capability.PathCLI, id, etag.IfMatch{})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "webhook endpoint %s has a new secret; the previous one also signs until %s. The new secret (shown once):\n%s\n",
			ep.ID, ep.PreviousSecretUntil.Format(time.RFC3339), ep.Secret)
	default:
		d, err := svc.Redeliver(ctx, p, capability.PathCLI, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "delivery %s of event %s is queued again\n", d.ID, d.EventID)
	}
	return nil
}

func cmdWebhooksDeliveries(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("webhooks deliveries ENDPOINT_ID [--limit N]", "List an endpoint's deliveries, newest first, with every attempt.", stderr)
	limit := fs.Int("limit", 20, "how many deliveries (1-100)")
	arg, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	n, err := page.ParseLimit(fmt.Sprint(*limit))
	if err != nil {
		return err
	}
	id, err := uuid.Parse(arg)
	if err != nil {
		return problem.NotFound("webhook endpoint " + arg)
	}
	svc, pool, p, err := webhooksCLI(ctx, e, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	list, err := svc.Deliveries(ctx, p, id, page.Request{Limit: n})
	if err != nil {
		return err
	}
	for _, d := range list.Data {
		fmt.Fprintf(stdout, "%s  %s  %s  event %s  %d attempt(s)\n", d.ID, d.EventType, d.Status, d.EventID, len(d.Attempts))
		for _, a := range d.Attempts {
			outcome := a.Error
			if a.StatusCode != nil {
				outcome = fmt.Sprintf("HTTP %d", *a.StatusCode)
			}
			fmt.Fprintf(stdout, "    #%d %s %dms %s\n", a.Attempt, a.AttemptedAt.Format(time.RFC3339), a.DurationMS, outcome)
		}
	}
	return nil
}
