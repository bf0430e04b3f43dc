package webhooks

import (
	"context"
	"fmt"
	"net/url"

	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// disableIfDead disables an endpoint whose delivery failed for good when
// nothing was delivered to it since that delivery began: with the default
// schedule, three days of failures. An endpoint that works for other
// events keeps working.
func (d *Deliverer) disableIfDead(ctx context.Context, e *Endpoint, del *Delivery) error {
	ok, err := deliveredSince(ctx, d.db, e.ID, del.CreatedAt)
	if err != nil || ok {
		return err
	}
	return d.disable(ctx, e, fmt.Sprintf("no delivery to it succeeded between %s and the last retry %s later",
		del.CreatedAt.Format("2006-01-02 15:04 UTC"), d.cfg.RetrySchedule.Total()))
}

// disable disables an enabled endpoint for reason, audits it, and mails its
// owner, in one transaction.
func (d *Deliverer) disable(ctx context.Context, e *Endpoint, reason string) error {
	return store.WithTx(ctx, d.db, func(ctx context.Context, tx pgx.Tx) error {
		cur, err := endpointLockTx(ctx, tx, e.ID)
		if err != nil || !cur.Enabled {
			return err
		}
		out, err := endpointSetEnabledTx(ctx, tx, cur, false, reason, d.cfg.now())
		if err != nil {
			return err
		}
		if err := auditEndpoint(ctx, tx, audit.Event{Type: "webhook_endpoint.disabled", Actor: "system", Via: string(capability.PathSystem)},
			out, map[string]any{"reason": reason}); err != nil {
			return err
		}
		if d.owners == nil {
			return nil
		}
		host := ""
		if u, err := url.Parse(out.URL); err == nil {
			host = u.Hostname()
		}
		jobs, err := d.owners.EndpointDisabledTx(ctx, tx, out.CreatedBy, out.ID, host, reason)
		if err != nil || len(jobs) == 0 {
			return err
		}
		_, err = river.ClientFromContext[pgx.Tx](ctx).InsertManyTx(ctx, tx, jobs)
		return err
	})
}
