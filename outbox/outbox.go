// Package outbox runs the work that follows a committed fact, on River:
// each event's subscribers (webhook deliveries, notification mails) turn it
// into rows and jobs inside the fact's own transaction (Emitter), so a
// rolled-back fact enqueues nothing and a committed one survives a crash;
// every replica of `invoiced serve` works the jobs, each once, and runs
// the periodic sweeps.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// The queues, each with its own worker bound: events holds an event's
// follow-up that needs a server's settings (an approval's mails, rendered
// there), short database work at the rate approvals are requested and
// decided, which an agent can drive as fast as issues; mail is SMTP work;
// webhook deliveries wait on other people's servers (up to 15 s each), so
// they get more workers; sweeps run one at a time.
const (
	QueueEvents      = "events"
	QueueWebhooks    = "webhooks"
	QueueMail        = "mail"
	QueueMaintenance = "maintenance"
)

// busyCooldown is how often a busy queue fetches: River fetches at most
// once per cooldown, so a queue runs at most MaxWorkers jobs per cooldown;
// at River's 100 ms, 4 workers capped deliveries at 40/s, below the ~300
// issues/s of `make bench-issue`. 25 ms allows 640 approval events/s (16
// workers) and 1,280 deliveries/s (32) per replica.
const busyCooldown = 25 * time.Millisecond

var queues = map[string]river.QueueConfig{
	QueueEvents:      {MaxWorkers: 16, FetchCooldown: busyCooldown},
	QueueWebhooks:    {MaxWorkers: 32, FetchCooldown: busyCooldown},
	QueueMail:        {MaxWorkers: 4},
	QueueMaintenance: {MaxWorkers: 1},
}

// WorkerSet adds a package's workers.
type WorkerSet interface {
	AddWorkers(w *river.Workers)
}

// Config is what Start needs.
type Config struct {
	// DB is River's own pool: background work then never takes a
	// connection a request is waiting for.
	DB *pgxpool.Pool
	// Log receives job failures and River's warnings.
	Log *slog.Logger
	// Workers are the job kinds (deliveries, mails, reminders).
	Workers []WorkerSet
	// Sweeps run periodically, once per cluster.
	Sweeps []Sweep
	// FetchPollInterval bounds how late a job whose time has come is
	// picked up when no insert notification announces it (retries,
	// scheduled jobs): at most 1 s; shorter for a compressed retry
	// schedule (FetchPollFor).
	FetchPollInterval time.Duration
	// Now is the clock jobs are scheduled and fall due by; nil is River's
	// (the wall clock). Tests pass the clock the services read, so that a
	// job scheduled at a time of that clock runs when it gets there.
	Now func() time.Time
}

// Runner is a started River client working every queue.
type Runner struct {
	client *river.Client[pgx.Tx]
}

// jobTimeout bounds every job: the longest are a webhook delivery (a
// 15 s request and its bookkeeping) and a mail (go-mail's 15 s
// connection timeout); the rest are short database work.
const jobTimeout = 20 * time.Second

// rescueAfter is when a job still "running" is taken for one whose worker
// died (kill -9) and run again: past jobTimeout, so a live worker's job is
// never rescued while it runs. River's rescuer looks every 30 s, so such a
// job runs again within a minute of its start.
const rescueAfter = jobTimeout + 5*time.Second

// softStop is how long Stop lets running jobs finish before cancelling
// them; a cancelled job is put back and run again by another replica,
// with its attempt not counted.
const softStop = 10 * time.Second

// Start builds the client and starts working.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	workers := river.NewWorkers()
	for _, ws := range cfg.Workers {
		ws.AddWorkers(workers)
	}
	periodic, err := addSweeps(workers, cfg.Sweeps)
	if err != nil {
		return nil, err
	}
	poll := cfg.FetchPollInterval
	if poll <= 0 {
		poll = time.Second
	}
	c, err := river.NewClient(riverpgxv5.New(cfg.DB), &river.Config{
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         periodic,
		FetchPollInterval:    poll,
		FetchCooldown:        min(poll, 100*time.Millisecond),
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: rescueAfter,
		SoftStopTimeout:      softStop,
		Logger:               quiet(cfg.Log),
		ErrorHandler:         &errorLogger{log: cfg.Log},
		Test:                 river.TestConfig{Time: clockOf(cfg.Now)},
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	// The client's life is the runner's, not the caller's request: Stop
	// ends it.
	if err := c.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("outbox: start: %w", err)
	}
	return &Runner{client: c}, nil
}

// Stop stops fetching and waits for running jobs (those still running
// after softStop are cancelled and requeued), at most until ctx ends.
func (r *Runner) Stop(ctx context.Context) error {
	err := r.client.Stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return r.client.StopAndCancel(context.WithoutCancel(ctx))
	}
	return err
}

// errorLogger logs a failed job. The error is the worker's, which names no
// URL, address or secret (workers make sure of it).
type errorLogger struct{ log *slog.Logger }

func (e *errorLogger) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	e.log.WarnContext(ctx, "job failed", "kind", job.Kind, "job_id", job.ID, "attempt", job.Attempt, "max_attempts", job.MaxAttempts, "err", err)
	return nil
}

func (e *errorLogger) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	e.log.ErrorContext(ctx, "job panicked", "kind", job.Kind, "job_id", job.ID, "attempt", job.Attempt, "panic", fmt.Sprint(panicVal), "trace", trace)
	return nil
}

// quiet passes River's warnings and errors on; its info logs describe
// every start, stop and leadership change.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

// clock is a rivertype.TimeGenerator over a clock function: River stamps
// and schedules jobs by its time.
type clock struct{ now func() time.Time }

func (c clock) Now() time.Time { return c.now() }

func (c clock) NowOrNil() *time.Time {
	t := c.now()
	return &t
}

// clockOf is River's time generator for now; nil leaves River its own.
func clockOf(now func() time.Time) rivertype.TimeGenerator {
	if now == nil {
		return nil
	}
	return clock{now: now}
}
