// Package notify mails people about approvals: the approvers a request
// needs (at once, and reminders before it lapses), and the requester when
// it is decided or lapses; and a webhook endpoint's owner when it is
// disabled. An approval event's transaction inserts one job (Fanout); that
// job renders the event's mails and schedules its reminders, and each mail
// is sent by a job of its own, so a mail server that is down delays them
// and sends none twice.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/mail"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Config is what the notifier needs.
type Config struct {
	// Sender sends the mails; nil sends none (INVOICED_SMTP_URL unset).
	Sender *mail.Sender
	// PublicURL is the base of the links in mails (INVOICED_PUBLIC_URL),
	// without a trailing slash.
	PublicURL string
	// Reminders are when undecided approvers are reminded; nil means
	// DefaultReminders.
	Reminders []Reminder
	// Now is the clock reminders are judged by (is the request still
	// pending and unexpired); nil is the wall clock. Tests set it to the
	// approvals' clock.
	Now func() time.Time
}

// Service renders and sends notification mails.
type Service struct {
	db        store.Executor
	sender    *mail.Sender
	publicURL string
	reminders []Reminder
	now       func() time.Time
	skipped   prometheus.Counter
}

// New returns the notifier; db is the pool its jobs read with.
func New(db store.Executor, cfg Config) *Service {
	s := &Service{db: db, sender: cfg.Sender, publicURL: strings.TrimRight(cfg.PublicURL, "/"), reminders: cfg.Reminders, now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if s.reminders == nil {
		s.reminders = DefaultReminders()
	}
	s.skipped = prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "invoiced_mail_recipients_skipped_total",
		Help:        "Notification mails not sent because their recipient has no email address.",
		ConstLabels: prometheus.Labels{"reason": "no_email"},
	})
	return s
}

// Enabled reports whether mails are sent at all.
func (s *Service) Enabled() bool { return s.sender != nil }

// Skipped counts recipients skipped for want of an address.
func (s *Service) Skipped() prometheus.Counter { return s.skipped }

// Fanout is the mails' outbox.Subscriber: an approval event's transaction
// inserts one mail.event job, which finds the recipients and renders the
// mails when a replica runs it (the CLI that may record the event has no
// mail settings). A replica without INVOICED_SMTP_URL completes it with
// nothing sent: mail is off there, as its startup said.
type Fanout struct{}

// HandleEventTx implements outbox.Subscriber.
func (Fanout) HandleEventTx(_ context.Context, _ pgx.Tx, ev outbox.Event) ([]river.InsertManyParams, error) {
	switch ev.Type {
	case events.ApprovalRequested, events.ApprovalDecided, events.ApprovalExpired, events.ApprovalEscalated:
		return []river.InsertManyParams{{Args: eventArgs{Event: ev}}}, nil
	}
	return nil, nil
}

// eventArgs is an approval event whose mails are to be rendered.
type eventArgs struct {
	Event outbox.Event `json:"event"`
}

func (eventArgs) Kind() string { return "mail.event" }

func (eventArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: outbox.QueueEvents} }

// eventWorker inserts an event's mail and reminder jobs and completes
// itself in one transaction, so an event is mailed once however often its
// job is tried.
type eventWorker struct {
	river.WorkerDefaults[eventArgs]
	s *Service
}

func (w *eventWorker) Work(ctx context.Context, job *river.Job[eventArgs]) error {
	if w.s.sender == nil {
		return nil
	}
	return store.WithTx(ctx, w.s.db, func(ctx context.Context, tx pgx.Tx) error {
		jobs, err := w.s.eventMails(ctx, tx, job.Args.Event)
		if err != nil {
			return fmt.Errorf("mails for %s %s: %w", job.Args.Event.Type, job.Args.Event.ID, err)
		}
		if len(jobs) == 0 {
			// Nothing written: River completes the job in a batch.
			return nil
		}
		if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertManyTx(ctx, tx, jobs); err != nil {
			return fmt.Errorf("mails for %s %s: enqueue: %w", job.Args.Event.Type, job.Args.Event.ID, err)
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}

// eventMails are the mails an approval event causes, and the reminders a
// new request schedules.
func (s *Service) eventMails(ctx context.Context, tx pgx.Tx, ev outbox.Event) ([]river.InsertManyParams, error) {
	var a approvals.Approval
	if err := json.Unmarshal(ev.Data, &a); err != nil {
		return nil, fmt.Errorf("approval event data: %w", err)
	}
	switch ev.Type {
	case events.ApprovalRequested:
		rs, err := undecided(ctx, tx, &a, s.now())
		if err != nil {
			return nil, err
		}
		jobs, err := s.mails(kindNeeded, &a, rs, func(r recipient) string { return s.messageID(ev.ID.String(), r.ID) })
		if err != nil {
			return nil, err
		}
		return append(jobs, s.reminderJobs(&a)...), nil
	case events.ApprovalEscalated:
		rs, err := escalatedTo(ctx, tx, &a, s.now())
		if err != nil {
			return nil, err
		}
		return s.mails(kindEscalated, &a, rs, func(r recipient) string { return s.messageID(ev.ID.String(), r.ID) })
	case events.ApprovalDecided:
		return s.toRequester(ctx, tx, ev, kindDecided, &a)
	default:
		return s.toRequester(ctx, tx, ev, kindExpired, &a)
	}
}

// toRequester mails the requester, if still enabled.
func (s *Service) toRequester(ctx context.Context, tx pgx.Tx, ev outbox.Event, k kind, a *approvals.Approval) ([]river.InsertManyParams, error) {
	r, ok, err := enabledUser(ctx, tx, a.RequestedBy.ID)
	if err != nil || !ok {
		return nil, err
	}
	return s.mails(k, a, []recipient{r}, func(r recipient) string { return s.messageID(ev.ID.String(), r.ID) })
}

// mails renders one mail of kind k per recipient with an address and
// counts the others.
func (s *Service) mails(k kind, a *approvals.Approval, rs []recipient, id func(recipient) string) ([]river.InsertManyParams, error) {
	var jobs []river.InsertManyParams
	for _, r := range rs {
		if r.Email == "" {
			s.skipped.Inc()
			continue
		}
		data := s.approvalMail(a)
		data.Name = r.Name
		m, err := render(k, r.Email, id(r), data)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, river.InsertManyParams{Args: sendArgs{Message: m}})
	}
	return jobs, nil
}

// messageID is stable for one notification (an event, a reminder) to one
// person.
func (s *Service) messageID(notification string, user uuid.UUID) string {
	return notification + "." + user.String() + "@" + s.sender.Domain()
}

// sendArgs is one rendered mail.
type sendArgs struct {
	Message mail.Message `json:"message"`
}

func (sendArgs) Kind() string { return "mail.send" }

// InsertOpts: River's default backoff (attempt⁴ seconds: 1 s, 16 s,
// 81 s, …), 15 attempts, about 36 h in all, for a mail server that is
// down for a day.
func (sendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: outbox.QueueMail, MaxAttempts: 15}
}

type sendWorker struct {
	river.WorkerDefaults[sendArgs]
	s *Service
}

func (w *sendWorker) Work(ctx context.Context, job *river.Job[sendArgs]) error {
	if w.s.sender == nil {
		return river.JobCancel(errors.New("INVOICED_SMTP_URL is not set on this replica"))
	}
	return w.s.sender.Send(ctx, job.Args.Message)
}

// AddWorkers implements outbox.WorkerSet.
func (s *Service) AddWorkers(w *river.Workers) {
	river.AddWorker(w, &eventWorker{s: s})
	river.AddWorker(w, &sendWorker{s: s})
	river.AddWorker(w, &remindWorker{s: s})
}

// Describe logs once where mails go; serve's start-up line says when
// there is no mail at all.
func (s *Service) Describe(log *slog.Logger) {
	if s.sender != nil {
		log.Info("notification mails on", "smtp", s.sender.Server().String(), "public_url", s.publicURL)
	}
}

// endpointMail is what the endpoint-disabled mail shows.
type endpointMail struct {
	Name, Host, Reason string
	EndpointID         uuid.UUID
}

// EndpointDisabledTx implements webhooks.OwnerNotifier: a mail to the
// admin who added the endpoint, if still enabled and with an address.
func (s *Service) EndpointDisabledTx(ctx context.Context, tx pgx.Tx, owner, endpoint uuid.UUID, host, reason string) ([]river.InsertManyParams, error) {
	if s.sender == nil {
		return nil, nil
	}
	r, ok, err := enabledUser(ctx, tx, owner)
	if err != nil || !ok {
		return nil, err
	}
	if r.Email == "" {
		s.skipped.Inc()
		return nil, nil
	}
	m, err := render(kindEndpointDisabled, r.Email, s.messageID("disabled."+uuid.Must(uuid.NewV7()).String(), r.ID),
		endpointMail{Name: r.Name, Host: host, Reason: reason, EndpointID: endpoint})
	if err != nil {
		return nil, err
	}
	return []river.InsertManyParams{{Args: sendArgs{Message: m}}}, nil
}
