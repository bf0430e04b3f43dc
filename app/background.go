package app

import (
	"cmp"
	"context"
	"fmt"
	"github.com/invoiced/invoiced/oauth"
	"log/slog"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/idempotency"
	"github.com/invoiced/invoiced/notify"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/web"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Sweep intervals (River periodic jobs, once per cluster).
const (
	// approvalSweepInterval bounds how late a waiting client learns that a
	// request expired, and so how late its approval.expired event goes
	// out: 30 s.
	approvalSweepInterval = 30 * time.Second
	// chatRunSweepInterval bounds how long a finished chat run's log
	// outlives its replay window, and how late a run whose replica died is
	// stored when nobody asks for it: 30 s.
	chatRunSweepInterval = 30 * time.Second
	// scheduleRunInterval bounds how late in its first day a period's
	// draft appears; a run with nothing due reads the live schedules
	// and their runs only.
	scheduleRunInterval = 5 * time.Minute
	// housekeepingInterval is for rows nobody waits on (used
	// confirmations, idempotency keys past 24 h, dead sessions): 5 min.
	housekeepingInterval = 5 * time.Minute
	// reminderInterval: reminders fall due by the day in the business
	// time zone; an hourly run sends them within the first hour of it,
	// and a replica down over midnight catches up at the next run.
	reminderInterval = time.Hour
)

// riverPoolConns sizes River's own pool: its listener holds one for life;
// the fetchers, the leader's maintenance and the workers' short
// transactions share the rest (a delivery holds one only to read and to
// record its attempt, never while it waits on the network). 8, as the
// request pool on 2 cores: with 4, jobs waited on the pool under
// `make bench-issue`.
const riverPoolConns = 8

// NewEmitter returns the emitter every path (the service, the CLI) records
// events with: an event's webhook deliveries and its mail job are written
// in the fact's own transaction.
func NewEmitter(log *slog.Logger) (*outbox.Emitter, error) {
	return outbox.NewEmitter(log, webhooks.Fanout{}, notify.Fanout{}, approvals.EscalationFanout{})
}

// startBackground starts River on a pool of its own: deliveries, mails,
// reminders and the sweeps.
func (a *App) startBackground(ctx context.Context, cfg Config, ctl *confirm.Controller, sessionIdle time.Duration) error {
	pc := a.pool.Config()
	pc.MaxConns = riverPoolConns
	pc.MinConns = 0
	pc.ConnConfig.RuntimeParams["application_name"] = "invoiced-jobs"
	// The jobs' own commits (an attempt's record, a job's completion, a
	// mail job's fan-out) need not wait for the WAL flush: a crash loses at most
	// the last ~200 ms of them, and each lost one only runs its job again
	// (at least once, same webhook-id). The facts and their events commit
	// on the request pool, flushed as ever. Under bench-issue these
	// commits, three or four per issued invoice, were what the background
	// work cost the issues.
	pc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	rp, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("jobs pool: %w", err)
	}
	a.riverPool = rp
	if cfg.Notify.Now == nil {
		cfg.Notify.Now = cfg.Clock
	}
	a.notify = notify.New(rp, cfg.Notify)
	a.notify.Describe(a.log)
	a.webhooks = webhooks.NewService(a.pool, a.events, cfg.Webhooks)
	deliverer := webhooks.NewDeliverer(rp, cfg.Webhooks, a.notify)
	a.background, err = outbox.Start(ctx, outbox.Config{
		DB:                rp,
		Log:               a.log,
		Workers:           []outbox.WorkerSet{a.notify, deliverer, a.sending.Workers(rp), approvals.EscalationWorkers{Svc: a.approvalSvc}},
		Now:               cfg.Clock,
		FetchPollInterval: outbox.FetchPollFor(cfg.Webhooks.Schedule()),
		Sweeps: []outbox.Sweep{
			{Name: "approval-expiry", Every: approvalSweepInterval, Run: func(ctx context.Context) error {
				_, err := a.approvalSvc.ExpireDue(ctx)
				return err
			}},
			{Name: "confirmations", Every: housekeepingInterval, Run: func(ctx context.Context) error {
				_, err := ctl.Sweep(ctx)
				return err
			}},
			{Name: "chat-runs", Every: chatRunSweepInterval, Run: a.chat.SweepRuns},
			{Name: "idempotency-keys", Every: housekeepingInterval, Run: func(ctx context.Context) error {
				_, err := idempotency.KeySweep(ctx, a.pool)
				return err
			}},
			{Name: "web-sessions", Every: housekeepingInterval, Run: func(ctx context.Context) error {
				_, err := web.SessionSweep(ctx, a.pool, sessionIdle)
				return err
			}},
			{Name: "schedules", Every: scheduleRunInterval, Run: func(ctx context.Context) error {
				_, err := a.schedules.Run(ctx)
				return err
			}},
			{Name: "oauth", Every: housekeepingInterval, Run: func(ctx context.Context) error {
				_, err := oauth.Sweep(ctx, a.pool)
				return err
			}},
			{Name: "reminders", Every: cmp.Or(cfg.ReminderInterval, reminderInterval), Run: func(ctx context.Context) error {
				_, err := a.reminders.RunDue(ctx)
				return err
			}},
		},
	})
	return err
}
