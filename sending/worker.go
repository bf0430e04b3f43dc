package sending

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/mail"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// sendArgs is one sending's mail, read from its row when the job runs.
type sendArgs struct {
	SendingID uuid.UUID `json:"sending_id"`
}

func (sendArgs) Kind() string { return "sending.send" }

// maxAttempts: River's backoff (attempt⁴ seconds), 15 attempts, about
// 36 h, as the notification mails: a mail server down for a day.
const maxAttempts = 15

func (sendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: outbox.QueueMail, MaxAttempts: maxAttempts}
}

type sendWorker struct {
	river.WorkerDefaults[sendArgs]
	s  *Service
	db store.Executor
}

// Workers is the mail job's worker, reading and writing through db
// (River's own pool).
func (s *Service) Workers(db store.Executor) outbox.WorkerSet { return workers{s: s, db: db} }

type workers struct {
	s  *Service
	db store.Executor
}

// AddWorkers implements outbox.WorkerSet.
func (ws workers) AddWorkers(w *river.Workers) { river.AddWorker(w, &sendWorker{s: ws.s, db: ws.db}) }

// Work hands the sending's mail to the SMTP server, then records it sent,
// emits its event and completes the job in one transaction. A retry after
// the server took the mail but before that commit sends it again with the
// same Message-ID, which mail clients show once.
func (w *sendWorker) Work(ctx context.Context, job *river.Job[sendArgs]) error {
	sn, err := SendingGetByID(ctx, w.db, job.Args.SendingID)
	if err != nil || sn.Status != StatusQueued {
		return err
	}
	if w.s.sender == nil {
		// Another replica, with mail on, retries it.
		return errors.New("INVOICED_SMTP_URL is not set on this replica")
	}
	m := mail.Message{To: sn.To, Subject: sn.Subject, Text: sn.text, HTML: sn.html, ID: sn.MessageID, ReplyTo: sn.replyTo}
	for _, d := range sn.Documents {
		m.Attachments = append(m.Attachments, mail.Attachment{Name: d.Filename, ContentType: d.ContentType, Data: d.content})
	}
	if err := w.s.sender.Send(ctx, m); err != nil {
		if job.Attempt >= job.MaxAttempts {
			if ferr := SendingMarkFailed(ctx, w.db, sn.ID, w.s.clock(), err.Error()); ferr != nil {
				return errors.Join(err, ferr)
			}
		}
		return err
	}
	return store.WithTx(ctx, w.db, func(ctx context.Context, tx pgx.Tx) error {
		at := w.s.clock()
		ok, err := SendingMarkSentTx(ctx, tx, sn.ID, at)
		if err != nil || !ok {
			return err
		}
		sn.Status, sn.SentAt = StatusSent, &at
		typ := events.InvoiceSent
		switch {
		case sn.CreditNoteID != nil:
			typ = events.CreditNoteSent
		case sn.ReminderLevel != nil:
			typ = events.InvoiceReminderSent
		}
		if err := w.s.emit.EmitTx(ctx, tx, events.New(typ, at, sn)); err != nil {
			return err
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}
