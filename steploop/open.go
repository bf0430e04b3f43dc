package steploop

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// opened is a conversation open for a run: its lease, the model's context
// (the stored transcript within the context budget, ending with the
// assistant message the run writes), what the request adds, and the run.
type opened struct {
	p     identity.Principal
	lease *Lease
	msgs  []Message
	delta Delta
	run   runStart
}

// open leases the conversation, reconciles the client's messages with the
// stored transcript, stores a new user message and opens the run. A new
// chat takes one statement; otherwise one transaction does it all, so a
// refused request leaves nothing behind, not even a new conversation or a
// held lease. A run of the conversation whose replica died is reaped
// first: the client's copy is reconciled with what it left.
//
// A caller with a deferred bearer token is authenticated by the first
// statement of the two fast paths (ADR-0011 §15), or looked up when that
// statement finds no holder for it; the general path looks it up first.
// The caller is authenticated whenever open succeeds; a refusal must go
// through who.Refusal.
func (s *Service) open(ctx context.Context, in chatInput, who *identity.Caller) (opened, error) {
	if o, ok, err := s.openNew(ctx, in, who); ok || err != nil {
		return o, err
	}
	if in.Last != nil && in.Last.Role == "user" {
		if o, ok, err := s.openNextUser(ctx, in, who); ok || err != nil {
			return o, err
		}
	}
	p, err := who.Principal(ctx)
	if err != nil {
		return opened{}, err
	}
	o, err := store.WithTxResult(ctx, s.cfg.DB, func(ctx context.Context, tx pgx.Tx) (opened, error) {
		lease, err := ConversationAcquire(ctx, tx, in.ID, p.UserID, s.cfg.LeaseTTL)
		if err != nil {
			return opened{}, err
		}
		if lease.stale != uuid.Nil {
			if err := s.reapTx(ctx, tx, lease.stale, lease); err != nil {
				return opened{}, err
			}
		}
		if in.Last != nil {
			return s.openLast(ctx, tx, lease, *in.Last)
		}
		return s.openFull(ctx, tx, lease, in.History)
	})
	o.p = p
	return o, err
}

// settle is the caller as the statement for o authenticated it; a caller
// the statement did not authenticate is looked up (its 401 or 403).
func settle(ctx context.Context, who *identity.Caller, o owner) (identity.Principal, error) {
	if o.holder != nil {
		return who.Settle(*o.holder), nil
	}
	return who.Principal(ctx)
}

// openNew opens a new conversation with its first message in one
// statement; ok is false when the request is not that (or the id is
// taken), and the general path answers it.
func (s *Service) openNew(ctx context.Context, in chatInput, who *identity.Caller) (opened, bool, error) {
	c := in.Last
	if c == nil {
		if len(in.History) != 1 {
			return opened{}, false, nil
		}
		c = &in.History[0]
	}
	d, err := ReconcileLast(nil, *c, s.isFrontend)
	if err != nil {
		return opened{}, false, nil
	}
	asst := s.newAnswer()
	run := runStart{ID: uuid.New(), MessageID: asst.ID, Position: 1, Head: runHead(asst)}
	o := ownerOf(who)
	l, ok, err := conversationCreate(ctx, s.cfg.DB, in.ID, &o, s.cfg.LeaseTTL, *d.NewUser, &run)
	if err != nil && !errors.Is(err, errNoHolder) {
		return opened{}, false, err
	}
	// A taken id leaves the general path a caller already authenticated.
	p, perr := settle(ctx, who, o)
	if perr != nil || !ok {
		return opened{}, false, perr
	}
	return opened{p: p, lease: l, msgs: []Message{*d.NewUser, asst}, delta: d, run: run}, true, nil
}

// openNextUser opens a turn for a new user message sent alone (the common
// turn in last-message mode) in two statements and no transaction, as
// cheap whatever the conversation's length: the first takes the lease and
// reads the last message, the second stores the message, opens the run
// and reads the model's context. Neither waits for the disk (the run's
// final write flushes them, as ConversationCreateWithMessage explains). A
// refusal between them gives the lease back. ok is false, the lease given
// back, when a dead run must be reaped first: the transaction path does.
func (s *Service) openNextUser(ctx context.Context, in chatInput, who *identity.Caller) (opened, bool, error) {
	if _, err := ReconcileLast(nil, *in.Last, s.isFrontend); err != nil {
		return opened{}, false, err
	}
	ow := ownerOf(who)
	l, last, err := acquire(ctx, s.cfg.DB, in.ID, &ow, s.cfg.LeaseTTL, true)
	if err != nil && !errors.Is(err, errNoHolder) && !errors.Is(err, errNotAcquired) {
		return opened{}, false, err
	}
	p, perr := settle(ctx, who, ow)
	switch {
	case perr != nil:
		return opened{}, false, perr
	case errors.Is(err, errNoHolder):
		return opened{}, false, nil // authenticated by the lookup after all
	case errors.Is(err, errNotAcquired):
		return opened{}, false, notAcquired(ctx, s.cfg.DB, in.ID, p.UserID)
	}
	o, err := s.openTurn(ctx, l, last, *in.Last)
	if err != nil || l.stale != uuid.Nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if rerr := ConversationRelease(rctx, s.cfg.DB, l); rerr != nil {
			s.cfg.Log.Error("steploop: release conversation", "conversation", l.ID, "err", rerr)
		}
		return opened{}, false, err
	}
	o.p = p
	return o, true, nil
}

// openTurn reconciles c with the last stored message and opens its turn.
func (s *Service) openTurn(ctx context.Context, l *Lease, last lastStored, c clientMessage) (opened, error) {
	if l.stale != uuid.Nil {
		return opened{}, nil
	}
	d, err := ReconcileLast(last.msg, c, s.isFrontend)
	if err != nil {
		return opened{}, err
	}
	if last.pos+3 > s.cfg.MaxMessages {
		return opened{}, tooManyMessages(s.cfg.MaxMessages)
	}
	asst := s.newAnswer()
	run := runStart{ID: uuid.New(), MessageID: asst.ID, Position: last.pos + 2, Head: runHead(asst)}
	tail, err := turnOpen(ctx, s.cfg.DB, l, last, *d.NewUser, run, s.cfg.ContextBudget)
	if err != nil {
		return opened{}, err
	}
	return opened{lease: l, msgs: append(tail, *d.NewUser, asst), delta: d, run: run}, nil
}

func tooManyMessages(max int) error {
	return problem.Invalid("messages", "a conversation holds at most %d messages; start a new conversation", max)
}

// openFull reconciles a request holding the whole message list.
func (s *Service) openFull(ctx context.Context, tx pgx.Tx, l *Lease, client []clientMessage) (opened, error) {
	var stored []Message
	if !l.created {
		var err error
		if stored, err = MessageList(ctx, tx, l.ID); err != nil {
			return opened{}, err
		}
	}
	d, err := Reconcile(stored, client, s.isFrontend)
	if err != nil {
		return opened{}, err
	}
	var last *Message
	if len(stored) > 0 {
		last = &stored[len(stored)-1]
	}
	return s.openRun(ctx, tx, l, len(stored), last, d, func() ([]Message, error) {
		if d.NewUser != nil {
			return budgetTail(append(stored, *d.NewUser), s.cfg.ContextBudget), nil
		}
		return budgetTail(stored, s.cfg.ContextBudget), nil
	})
}

// openLast reconciles a request holding the last message only: only the
// stored last message is read, and then the transcript within the context
// budget, whatever the conversation's length.
func (s *Service) openLast(ctx context.Context, tx pgx.Tx, l *Lease, c clientMessage) (opened, error) {
	var (
		last *Message
		pos  = -1
	)
	if !l.created {
		var err error
		if last, pos, err = messageLast(ctx, tx, l.ID); err != nil {
			return opened{}, err
		}
	}
	d, err := ReconcileLast(last, c, s.isFrontend)
	if err != nil {
		return opened{}, err
	}
	return s.openRun(ctx, tx, l, pos+1, last, d, func() ([]Message, error) {
		return contextTail(ctx, tx, l.ID, s.cfg.ContextBudget)
	})
}

// openRun stores a new user message (after n stored ones, the last being
// last) or applies the browser's answers to last, and opens the run on the
// answer; loadContext loads the model's context, the answer's stored copy
// included when it has one.
func (s *Service) openRun(ctx context.Context, tx pgx.Tx, l *Lease, n int, last *Message, d Delta, loadContext func() ([]Message, error)) (opened, error) {
	var (
		asst Message
		pos  int
	)
	if d.NewUser != nil {
		if n+2 > s.cfg.MaxMessages {
			return opened{}, tooManyMessages(s.cfg.MaxMessages)
		}
		if err := MessagePut(ctx, tx, l.ID, n, *d.NewUser); err != nil {
			return opened{}, err
		}
		asst, pos = s.newAnswer(), n+1
	} else {
		asst, pos = s.continued(*last, d), n-1
	}
	run := runStart{ID: uuid.New(), MessageID: asst.ID, Position: pos, Head: runHead(asst)}
	if err := runInsert(ctx, tx, l, run); err != nil {
		return opened{}, err
	}
	msgs, err := loadContext()
	if err != nil {
		return opened{}, err
	}
	if k := len(msgs) - 1; k >= 0 && msgs[k].ID == asst.ID {
		msgs[k] = asst
	} else {
		msgs = append(msgs, asst)
	}
	return opened{lease: l, msgs: msgs, delta: d, run: run}, nil
}

// newAnswer is the assistant message a new user message gets.
func (s *Service) newAnswer() Message {
	return Message{ID: newMessageID(), Role: "assistant", Parts: []Part{},
		Metadata: &Metadata{CreatedAt: jsTime(time.Now()), Model: s.cfg.Model.Name()}}
}

// jsTime is t as JavaScript's Date.toISOString writes it.
func jsTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// continued is the stored answer m as a run continues it: the browser's
// answers in d applied (the client holds them already), its metadata
// naming the model now answering.
func (s *Service) continued(m Message, d Delta) Message {
	m.Parts = append([]Part(nil), m.Parts...)
	md := Metadata{CreatedAt: jsTime(time.Now())}
	if m.Metadata != nil {
		md = *m.Metadata
	}
	md.Model = s.cfg.Model.Name()
	m.Metadata = &md
	part := func(id string) *Part {
		for i := range m.Parts {
			if m.Parts[i].IsTool() && m.Parts[i].ToolCallID == id {
				return &m.Parts[i]
			}
		}
		return nil
	}
	for _, o := range d.Outputs {
		p := part(o.ToolCallID)
		if o.IsError {
			p.State, p.ErrorText = StateOutputError, o.ErrorText
		} else {
			p.State, p.Output = StateOutputAvailable, o.Output
		}
	}
	for _, a := range d.Approvals {
		p := part(a.ToolCallID)
		approved := a.Approved
		p.State = StateApprovalResponded
		p.Approval = &PartApproval{ID: a.ApprovalID, Approved: &approved, Reason: a.Reason}
	}
	return m
}
