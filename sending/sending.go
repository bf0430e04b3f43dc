// Package sending mails issued invoices and credit notes to their
// customers: the send-invoice and send-credit-note capabilities render the
// documents the customer's e-invoice format asks for, record the sending
// (to whom, which documents, the mail and its Message-ID) with the
// documents as sent, audit it and enqueue one mail job, all in one
// transaction; the job hands the mail to the SMTP server and, in the
// transaction that completes it, records that it was sent and emits
// invoice.sent or credit_note.sent. Resending is another sending.
package sending

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/mail"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// CodeMailNotConfigured is the 503 problem code of a sending asked for
// while this server has no SMTP server to send through.
const CodeMailNotConfigured = "MAIL_NOT_CONFIGURED"

// Status is where a sending is: queued until the SMTP server accepted
// the mail (sent) or the retries gave up (failed).
type Status string

// The statuses.
const (
	StatusQueued Status = "queued"
	StatusSent   Status = "sent"
	StatusFailed Status = "failed"
)

// Document is one file a sending carried: what it is, and a digest of
// the bytes the customer received (kept with the sending).
type Document struct {
	Format      Format `json:"format"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int    `json:"size"`
	SHA256      string `json:"sha256"`
	content     []byte
}

// Sending is one mail of an invoice or a credit note to its customer.
type Sending struct {
	ID           uuid.UUID  `json:"id"`
	InvoiceID    *uuid.UUID `json:"invoice_id"`
	CreditNoteID *uuid.UUID `json:"credit_note_id"`
	// Number is the invoice's or credit note's.
	Number    string     `json:"number"`
	To        string     `json:"to"`
	Subject   string     `json:"subject"`
	Documents []Document `json:"documents"`
	MessageID string     `json:"message_id"`
	Status    Status     `json:"status"`
	// ReminderLevel is the reminder level a reminder of an overdue
	// invoice reminds at (docs/reminders.md); null for a plain sending.
	ReminderLevel *int `json:"reminder_level"`
	// RequestedBy is null for an automatic reminder.
	RequestedBy *uuid.UUID `json:"requested_by"`
	RequestedAt time.Time  `json:"requested_at"`
	SentAt      *time.Time `json:"sent_at"`
	FailedAt    *time.Time `json:"failed_at"`
	// Error is why the last attempt failed, once the retries gave up.
	Error   string `json:"error,omitempty"`
	text    string
	html    string
	replyTo string
}

// Cursor is the sending's position in its document's list.
func (s *Sending) Cursor() page.Cursor { return page.Cursor{CreatedAt: s.RequestedAt, ID: s.ID} }

// subject is what the sending mails: an invoice or a credit note.
func (s *Sending) subject() (typ, id string) {
	if s.InvoiceID != nil {
		return "invoice", s.InvoiceID.String()
	}
	return "credit_note", s.CreditNoteID.String()
}

// Jobs enqueues a job in the caller's transaction (outbox.Emitter).
type Jobs interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) error
}

// Config is what the service needs beyond the database.
type Config struct {
	// Sender mails the documents; nil (INVOICED_SMTP_URL unset) makes
	// every sending a 503 MAIL_NOT_CONFIGURED.
	Sender *mail.Sender
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service runs the sending capabilities and their mail jobs.
type Service struct {
	db     store.Executor
	jobs   Jobs
	emit   events.Emitter
	sender *mail.Sender
	now    func() time.Time
}

// New returns the service over db; jobs enqueues the mail jobs in the
// sending's transaction, emit records the sent events in the job's.
func New(db store.Executor, jobs Jobs, emit events.Emitter, cfg Config) *Service {
	s := &Service{db: db, jobs: jobs, emit: emit, sender: cfg.Sender, now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// requireMail is the 503 of a server that cannot send.
func (s *Service) requireMail() error {
	if s.sender == nil {
		return problem.New(http.StatusServiceUnavailable, CodeMailNotConfigured,
			"this server sends no mail: an operator sets INVOICED_SMTP_URL and INVOICED_MAIL_FROM (docs/operating.md), then documents can be sent")
	}
	return nil
}

// decode reads a call's effective input into v (the registry validated it).
func decode(call capability.Call, v any) error {
	if err := json.Unmarshal(call.Input, v); err != nil {
		return fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return nil
}

// result is a capability's answer: no output with an error.
func result[T any](out T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}
