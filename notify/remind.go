package notify

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Reminder is when an undecided approver is reminded of a pending
// request: after a share of its life, or some time before it lapses.
type Reminder struct {
	// Share of the request's life elapsed (0 < Share < 1), or 0.
	Share float64
	// Left before it lapses, or 0.
	Left time.Duration
}

// DefaultReminders: at half the request's life and with 12 h left (with
// the default 72 h: after 36 h, and after 60 h).
func DefaultReminders() []Reminder { return []Reminder{{Share: 0.5}, {Left: 12 * time.Hour}} }

// ParseReminders reads INVOICED_APPROVAL_REMINDERS: comma-separated
// percentages of a request's life ("50%") and durations before it lapses
// ("12h"); "none" turns reminders off.
func ParseReminders(s string) ([]Reminder, error) {
	if strings.TrimSpace(s) == "none" {
		return []Reminder{}, nil
	}
	var out []Reminder
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if p, ok := strings.CutSuffix(f, "%"); ok {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n >= 100 {
				return nil, fmt.Errorf("%q: a share of the request's life must be 1%% to 99%%", f)
			}
			out = append(out, Reminder{Share: float64(n) / 100})
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is neither a percentage such as 50%% nor a duration such as 12h", f)
		}
		out = append(out, Reminder{Left: d})
	}
	return out, nil
}

// at is when the reminder falls for a request created at created that
// lapses at expires.
func (r Reminder) at(created, expires time.Time) time.Time {
	if r.Left > 0 {
		return expires.Add(-r.Left)
	}
	return created.Add(time.Duration(float64(expires.Sub(created)) * r.Share))
}

// remindArgs reminds the undecided approvers of a request; N tells the
// reminders of one request apart (in Message-IDs).
type remindArgs struct {
	ApprovalID uuid.UUID `json:"approval_id"`
	N          int       `json:"n"`
}

func (remindArgs) Kind() string { return "approval.remind" }

func (remindArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: outbox.QueueMail} }

// reminderJobs schedules the reminders of a new request that fall after it
// was made and before it lapses; two that fall at once are one.
func (s *Service) reminderJobs(a *approvals.Approval) []river.InsertManyParams {
	var jobs []river.InsertManyParams
	seen := map[time.Time]bool{}
	for i, r := range s.reminders {
		at := r.at(a.CreatedAt, a.ExpiresAt)
		if !at.After(a.CreatedAt) || !at.Before(a.ExpiresAt) || seen[at] {
			continue
		}
		seen[at] = true
		jobs = append(jobs, river.InsertManyParams{Args: remindArgs{ApprovalID: a.ID, N: i + 1}, InsertOpts: &river.InsertOpts{ScheduledAt: at}})
	}
	return jobs
}

type remindWorker struct {
	river.WorkerDefaults[remindArgs]
	s *Service
}

// Work mails the approvers who have not decided, if the request is still
// pending and has not lapsed; the mails and the reminder's completion
// commit together.
func (w *remindWorker) Work(ctx context.Context, job *river.Job[remindArgs]) error {
	return store.WithTx(ctx, w.s.db, func(ctx context.Context, tx pgx.Tx) error {
		jobs, err := w.s.reminderMails(ctx, tx, job.Args)
		if err != nil {
			return err
		}
		if len(jobs) > 0 {
			if _, err := river.ClientFromContext[pgx.Tx](ctx).InsertManyTx(ctx, tx, jobs); err != nil {
				return err
			}
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}

func (s *Service) reminderMails(ctx context.Context, tx pgx.Tx, args remindArgs) ([]river.InsertManyParams, error) {
	if s.sender == nil {
		return nil, nil
	}
	a, err := approvals.ApprovalGetByID(ctx, tx, args.ApprovalID)
	if pe, ok := problem.As(err); ok && pe.Code == problem.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if a.Status != approvals.StatusPending || !now.Before(a.ExpiresAt) {
		return nil, nil
	}
	rs, err := undecided(ctx, tx, a, now)
	if err != nil {
		return nil, err
	}
	return s.mails(kindReminder, a, rs, func(r recipient) string {
		return s.messageID(fmt.Sprintf("%s.remind%d", a.ID, args.N), r.ID)
	})
}
