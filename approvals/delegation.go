package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// A delegation hands an approver's approvals to another approver for a
// window, From (inclusive) to Until (exclusive), or until the delegator
// ends it. While it runs, the delegate may decide every request the
// delegator may decide (one hop: never those the delegator could only
// decide through a delegation of their own), on their own standing too
// (enabled, approver or admin, not the request's requester), and the two
// are one voice: whichever decides first speaks for both. A delegation
// never adds a vote: a delegate holding the approvals of several people
// still counts once.

// DelegationStatus is where a delegation is in its window at a time.
type DelegationStatus string

// The statuses of a delegation.
const (
	DelegationScheduled DelegationStatus = "scheduled"
	DelegationActive    DelegationStatus = "active"
	DelegationEnded     DelegationStatus = "ended"
	DelegationLapsed    DelegationStatus = "lapsed"
)

// Delegation is one hand-over of approvals.
type Delegation struct {
	ID        uuid.UUID        `json:"id"`
	Delegator UserRef          `json:"delegator"`
	Delegate  UserRef          `json:"delegate"`
	From      time.Time        `json:"from"`
	Until     time.Time        `json:"until"`
	CreatedAt time.Time        `json:"created_at"`
	EndedAt   *time.Time       `json:"ended_at,omitempty"`
	Status    DelegationStatus `json:"status"`
}

// statusAt sets d.Status as of now.
func (d *Delegation) statusAt(now time.Time) {
	switch {
	case d.EndedAt != nil:
		d.Status = DelegationEnded
	case now.Before(d.From):
		d.Status = DelegationScheduled
	case now.Before(d.Until):
		d.Status = DelegationActive
	default:
		d.Status = DelegationLapsed
	}
}

// DelegationInput is a delegation to make: to the user named Delegate,
// from From (RFC 3339; empty: now) until Until.
type DelegationInput struct {
	Delegate string `json:"delegate"`
	From     string `json:"from"`
	Until    string `json:"until"`
}

// MaxDelegation bounds a delegation's window: a year and a day covers the
// longest leave without leaving authority handed over indefinitely.
const MaxDelegation = 366 * 24 * time.Hour

// delegationLockKey serialises delegation changes (pg_advisory_xact_lock),
// so two made at once cannot form a chain or a cycle each alone would not.
// Decisions never take it: they share-lock the rows they rely on.
const delegationLockKey int64 = 0x64656c6567617465 // "delegate"

// DelegationCreate hands p's approvals to in.Delegate for in's window.
// p must be an enabled approver or admin (403 otherwise). Refused with
// 422 naming the field, nothing written: a delegate who is no enabled
// approver or admin, or p; a window that is empty, longer than
// MaxDelegation, or starts in the past; and a delegation that would make
// a chain (the delegate hands on their own approvals in the window, or p
// holds someone's) or a cycle, or overlap one p already made.
func (s *Service) DelegationCreate(ctx context.Context, p identity.Principal, via capability.Path, in DelegationInput) (*Delegation, error) {
	now := s.policy.now()
	from, until, err := checkDelegationWindow(in, now)
	if err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Delegation, error) {
		u, err := identity.UserLockShareTx(ctx, tx, p.UserID)
		if err != nil {
			return nil, err
		}
		if Lapse(u) != "" {
			return nil, problem.Forbidden("only enabled approvers and admins delegate their approvals")
		}
		to, err := delegateGet(ctx, tx, u, in.Delegate)
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, delegationLockKey); err != nil {
			return nil, store.MapError(err, "delegation")
		}
		if err := checkDelegationGraph(ctx, tx, u.ID, to, from, until, now); err != nil {
			return nil, err
		}
		d := &Delegation{ID: uuid.Must(uuid.NewV7()), Delegator: UserRef{ID: u.ID, Username: u.Username},
			Delegate: UserRef{ID: to.ID, Username: to.Username}, From: from, Until: until, CreatedAt: now}
		d.statusAt(now)
		if err := delegationInsertTx(ctx, tx, d); err != nil {
			return nil, err
		}
		by := eventActor{id: u.ID.String(), name: u.Username, via: via}
		if _, err := audit.AppendTx(ctx, tx, by.delegationEvent("delegation.created", d)); err != nil {
			return nil, err
		}
		return d, nil
	})
}

// checkDelegationWindow reads in's window: From may be empty (now) and
// must not be in the past; Until must follow it, within MaxDelegation.
func checkDelegationWindow(in DelegationInput, now time.Time) (time.Time, time.Time, error) {
	var bad []problem.FieldError
	fail := func(field, format string, args ...any) {
		bad = append(bad, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if strings.TrimSpace(in.Delegate) == "" {
		fail("delegate", "is required: the username of the approver to hand your approvals to")
	}
	from := now
	if in.From != "" {
		t, err := time.Parse(time.RFC3339Nano, in.From)
		switch {
		case err != nil:
			fail("from", "must be a time in RFC 3339 form such as 2026-12-24T00:00:00Z")
		case t.Before(now):
			// A delegation made now cannot have held before it existed;
			// the audit chain would say otherwise.
			fail("from", "must not be in the past; leave it out to start now")
		default:
			from = t.UTC().Truncate(time.Microsecond)
		}
	}
	var until time.Time
	switch t, err := time.Parse(time.RFC3339Nano, in.Until); {
	case in.Until == "":
		fail("until", "is required: when the delegation ends (exclusive)")
	case err != nil:
		fail("until", "must be a time in RFC 3339 form such as 2027-01-07T00:00:00Z")
	default:
		until = t.UTC().Truncate(time.Microsecond)
		switch {
		case !until.After(from):
			fail("until", "must be after from (%s): a delegation's window cannot be empty", from.Format(time.RFC3339))
		case until.Sub(from) > MaxDelegation:
			fail("until", "must be at most %d days after from", MaxDelegation/(24*time.Hour))
		}
	}
	if len(bad) > 0 {
		return time.Time{}, time.Time{}, problem.Validation(bad...)
	}
	return from, until, nil
}

// delegateGet returns the user named name if they may hold u's approvals:
// an enabled approver or admin other than u.
func delegateGet(ctx context.Context, tx pgx.Tx, u *identity.User, name string) (*identity.User, error) {
	to, err := identity.UserGetByUsername(ctx, tx, strings.TrimSpace(name))
	if pe, ok := problem.As(err); ok && pe.Code == problem.CodeNotFound {
		return nil, problem.Invalid("delegate", "%q is no user", name)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case to.ID == u.ID:
		return nil, problem.Invalid("delegate", "must be someone else: you hold your own approvals")
	case Lapse(to) != "":
		return nil, problem.Invalid("delegate", "%q is not an enabled approver or admin: a delegate must be able to decide on their own standing", to.Username)
	}
	return to, nil
}

// checkDelegationGraph refuses a delegation from delegator to `to` over
// [from, until) that would overlap, in that window, another delegation
// that makes a chain (to hands theirs on; someone handed theirs to
// delegator), a cycle (to handed theirs to delegator), or a second
// delegate for delegator. The caller holds the delegation lock.
func checkDelegationGraph(ctx context.Context, tx pgx.Tx, delegator uuid.UUID, to *identity.User, from, until, now time.Time) error {
	rows, err := delegationsOverlapping(ctx, tx, []uuid.UUID{delegator, to.ID}, from, until, now)
	if err != nil {
		return err
	}
	for _, d := range rows {
		window := fmt.Sprintf("%s until %s", d.From.Format(time.RFC3339), d.Until.Format(time.RFC3339))
		switch {
		case d.Delegator.ID == to.ID && d.Delegate.ID == delegator:
			return problem.Invalid("delegate", "%s hands their approvals to you from %s; handing yours to them would make a cycle", to.Username, window)
		case d.Delegator.ID == delegator:
			return problem.Invalid("delegate", "you already hand your approvals to %s from %s; end that delegation first", d.Delegate.Username, window)
		case d.Delegator.ID == to.ID:
			return problem.Invalid("delegate", "%s hands their own approvals to %s from %s: delegations go one hop, not on", to.Username, d.Delegate.Username, window)
		case d.Delegate.ID == delegator:
			return problem.Invalid("delegate", "you hold %s's approvals from %s: delegations go one hop, so you cannot hand them on", d.Delegator.Username, window)
		}
	}
	return nil
}

// DelegationList returns the delegations p made or holds, newest first.
func (s *Service) DelegationList(ctx context.Context, p identity.Principal) ([]*Delegation, error) {
	out, err := delegationsQuery(ctx, s.db, ` WHERE d.delegator_id = $1 OR d.delegate_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT 500`, p.UserID)
	if err != nil {
		return nil, err
	}
	now := s.policy.now()
	for _, d := range out {
		d.statusAt(now)
	}
	return out, nil
}

// DelegationEnd ends delegation id at once; only its delegator may (404
// for anyone else, who need not learn it exists). Ending one that is over
// already changes nothing.
func (s *Service) DelegationEnd(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID) (*Delegation, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Delegation, error) {
		now := s.policy.now()
		ds, err := delegationsQuery(ctx, tx, ` WHERE d.id = $1 AND d.delegator_id = $2 FOR UPDATE OF d`, id, p.UserID)
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			return nil, problem.NotFound("delegation " + id.String())
		}
		d := ds[0]
		d.statusAt(now)
		if d.Status == DelegationEnded || d.Status == DelegationLapsed {
			return d, nil
		}
		if _, err := tx.Exec(ctx, `UPDATE approval_delegations SET ended_at = $2 WHERE id = $1`, d.ID, now); err != nil {
			return nil, store.MapError(err, "delegation")
		}
		d.EndedAt = &now
		d.statusAt(now)
		by := eventActor{id: p.UserID.String(), name: p.Username, via: via}
		if _, err := audit.AppendTx(ctx, tx, by.delegationEvent("delegation.ended", d)); err != nil {
			return nil, err
		}
		return d, nil
	})
}

func (e eventActor) delegationEvent(typ string, d *Delegation) audit.Event {
	data := map[string]any{"delegator": d.Delegator, "delegate": d.Delegate,
		"from": d.From.Format(time.RFC3339Nano), "until": d.Until.Format(time.RFC3339Nano)}
	if d.EndedAt != nil {
		data["ended_at"] = d.EndedAt.Format(time.RFC3339Nano)
	}
	return audit.Event{Type: typ, ActorID: e.id, Actor: e.name, Via: string(e.via), SubjectType: "delegation", SubjectID: d.ID.String(), Data: data}
}

// standingLockTx reads, for the deciding transaction, the delegations in
// force at now that u holds or made, share-locking them so that ending
// one waits for the decision (or the decision for the end, and then does
// not see it). The delegators' own standing comes with them.
func standingLockTx(ctx context.Context, tx pgx.Tx, u *identity.User, now time.Time) (*standing, error) {
	rows, err := tx.Query(ctx, `
		SELECT d.delegator_id, a.username, a.role, a.disabled, d.delegate_id, b.username
		FROM approval_delegations d JOIN users a ON a.id = d.delegator_id JOIN users b ON b.id = d.delegate_id
		WHERE (d.delegate_id = $1 OR d.delegator_id = $1)
		  AND d.valid_from <= $2 AND d.valid_until > $2 AND d.ended_at IS NULL
		ORDER BY a.username
		FOR SHARE OF d`, u.ID, now)
	if err != nil {
		return nil, store.MapError(err, "delegations")
	}
	defer rows.Close()
	st := &standing{user: u}
	for rows.Next() {
		var (
			f  delegatorRef
			to UserRef
		)
		if err := rows.Scan(&f.ID, &f.Username, &f.role, &f.disabled, &to.ID, &to.Username); err != nil {
			return nil, store.MapError(err, "delegations")
		}
		if to.ID == u.ID {
			st.from = append(st.from, f)
		} else {
			st.to = &to
		}
	}
	return st, store.MapError(rows.Err(), "delegations")
}

// ---- SQL ----

const delegationColumns = `d.id, d.delegator_id, a.username, d.delegate_id, b.username, d.valid_from, d.valid_until, d.created_at, d.ended_at`

const delegationFrom = ` FROM approval_delegations d JOIN users a ON a.id = d.delegator_id JOIN users b ON b.id = d.delegate_id`

func delegationsQuery(ctx context.Context, db store.Executor, where string, args ...any) ([]*Delegation, error) {
	rows, err := db.Query(ctx, `SELECT `+delegationColumns+delegationFrom+where, args...)
	if err != nil {
		return nil, store.MapError(err, "delegations")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Delegation, error) {
		var d Delegation
		err := r.Scan(&d.ID, &d.Delegator.ID, &d.Delegator.Username, &d.Delegate.ID, &d.Delegate.Username,
			&d.From, &d.Until, &d.CreatedAt, &d.EndedAt)
		d.From, d.Until, d.CreatedAt, d.EndedAt = d.From.UTC(), d.Until.UTC(), d.CreatedAt.UTC(), utcPtr(d.EndedAt)
		return &d, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return out, store.MapError(err, "delegations")
}

// delegationsOverlapping returns the delegations made or held by any of
// users whose window, as ended, overlaps [from, until) and has not
// passed at now.
func delegationsOverlapping(ctx context.Context, db store.Executor, users []uuid.UUID, from, until, now time.Time) ([]*Delegation, error) {
	return delegationsQuery(ctx, db, `
		WHERE (d.delegator_id = ANY($1) OR d.delegate_id = ANY($1))
		  AND d.valid_from < $3 AND coalesce(least(d.ended_at, d.valid_until), d.valid_until) > greatest($2, $4::timestamptz)
		ORDER BY d.created_at`, users, from, until, now)
}

func delegationInsertTx(ctx context.Context, tx pgx.Tx, d *Delegation) error {
	_, err := tx.Exec(ctx, `INSERT INTO approval_delegations (id, delegator_id, delegate_id, valid_from, valid_until, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, d.ID, d.Delegator.ID, d.Delegate.ID, d.From, d.Until, d.CreatedAt)
	return store.MapError(err, "delegation")
}
