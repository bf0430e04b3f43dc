package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// EscalationFanout is the outbox subscriber that schedules a request's
// escalation: a request that will escalate inserts, in its own
// transaction, one job due when it escalates.
type EscalationFanout struct{}

// HandleEventTx implements outbox.Subscriber.
func (EscalationFanout) HandleEventTx(_ context.Context, _ pgx.Tx, ev outbox.Event) ([]river.InsertManyParams, error) {
	if ev.Type != events.ApprovalRequested {
		return nil, nil
	}
	var a struct {
		ID         uuid.UUID          `json:"id"`
		Escalation *RequestEscalation `json:"escalation"`
	}
	if err := json.Unmarshal(ev.Data, &a); err != nil {
		return nil, fmt.Errorf("approval event data: %w", err)
	}
	if a.Escalation == nil {
		return nil, nil
	}
	return []river.InsertManyParams{{Args: escalateArgs{ApprovalID: a.ID}, InsertOpts: &river.InsertOpts{ScheduledAt: a.Escalation.At}}}, nil
}

// escalateArgs escalates one request when it falls due.
type escalateArgs struct {
	ApprovalID uuid.UUID `json:"approval_id"`
}

func (escalateArgs) Kind() string { return "approval.escalate" }

func (escalateArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: outbox.QueueEvents} }

// EscalationWorkers is the escalation job's outbox.WorkerSet.
type EscalationWorkers struct {
	Svc *Service
}

// AddWorkers implements outbox.WorkerSet.
func (w EscalationWorkers) AddWorkers(ws *river.Workers) {
	river.AddWorker(ws, &escalateWorker{s: w.Svc})
}

type escalateWorker struct {
	river.WorkerDefaults[escalateArgs]
	s *Service
}

// Work escalates the request if it is due by the service's clock. A
// replica whose clock runs behind the one that scheduled the job snoozes
// it until then; a request decided, closed or escalated meanwhile needs
// nothing.
func (w *escalateWorker) Work(ctx context.Context, job *river.Job[escalateArgs]) error {
	wait, err := w.s.escalate(ctx, job.Args.ApprovalID)
	if err != nil {
		return err
	}
	if wait > 0 {
		return river.JobSnooze(wait)
	}
	return nil
}

// escalate escalates request id if due; else it returns how long until
// it is (0: never).
func (s *Service) escalate(ctx context.Context, id uuid.UUID) (time.Duration, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (time.Duration, error) {
		now := s.policy.now()
		a, err := approvalLockTx(ctx, tx, id)
		if pe, ok := problem.As(err); ok && pe.Code == problem.CodeNotFound {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		switch {
		case a.escalationDue(now):
			return 0, s.escalateTx(ctx, tx, a, now, systemActor)
		case a.Status == StatusPending && a.Escalation != nil && a.Escalation.EscalatedAt == nil && now.Before(a.Escalation.At):
			return a.Escalation.At.Sub(now), nil
		}
		return 0, nil
	})
}
