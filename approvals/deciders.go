package approvals

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Who may decide a request. By default every enabled approver and admin
// other than the requester. A rule may narrow that to an Audience (its
// deciders) and widen it again after a delay (its escalation); an
// approver may hand their approvals to another for a window (a
// Delegation, delegation.go). None of them changes how many approvals a
// request needs.

// Audience is the named users and everyone holding Role or a higher one
// (approver < admin).
type Audience struct {
	Role  identity.Role `json:"role,omitempty"`
	Users []UserRef     `json:"users,omitempty"`
}

// roleRank orders the roles that decide; a clerk ranks below both.
func roleRank(r identity.Role) int {
	switch r {
	case identity.RoleApprover:
		return 1
	case identity.RoleAdmin:
		return 2
	}
	return 0
}

// includes reports whether a user of role is in au by name or by role.
func (au *Audience) includes(id uuid.UUID, role identity.Role) bool {
	if au.Role != "" && roleRank(role) >= roleRank(au.Role) {
		return true
	}
	return slices.ContainsFunc(au.Users, func(u UserRef) bool { return u.ID == id })
}

// ids returns the named users' ids (nil for none).
func (au *Audience) ids() []uuid.UUID {
	if au == nil || au.Users == nil {
		return nil
	}
	out := make([]uuid.UUID, len(au.Users))
	for i, u := range au.Users {
		out[i] = u.ID
	}
	return out
}

// role returns au's role, nil for none.
func (au *Audience) role() *string {
	if au == nil || au.Role == "" {
		return nil
	}
	r := string(au.Role)
	return &r
}

// Escalation widens a rule's deciders once a request has been pending for
// After: Audience may decide it too.
type Escalation struct {
	After    Duration `json:"after"`
	Audience Audience `json:"to"`
}

// Duration is a time.Duration written as Go writes it ("24h0m0s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler, for clients reading
// what MarshalText wrote.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// RequestEscalation is when a request escalates (At) and to whom; once it
// did, EscalatedAt says when.
type RequestEscalation struct {
	At          time.Time  `json:"at"`
	Audience    Audience   `json:"to"`
	EscalatedAt *time.Time `json:"escalated_at,omitempty"`
}

// among reports whether a user of role is among a's deciders now (before
// the checks of every decider: enabled, may decide, not the requester).
func (a *Approval) among(id uuid.UUID, role identity.Role) bool {
	if a.Deciders == nil || a.Deciders.includes(id, role) {
		return true
	}
	e := a.Escalation
	return e != nil && e.EscalatedAt != nil && e.Audience.includes(id, role)
}

// escalationDue reports whether a is open, unescalated, and due at now.
func (a *Approval) escalationDue(now time.Time) bool {
	e := a.Escalation
	return a.Status == StatusPending && e != nil && e.EscalatedAt == nil && !now.Before(e.At) && now.Before(a.ExpiresAt)
}

// AudienceInput names an audience: usernames and a role.
type AudienceInput struct {
	Role  string   `json:"role"`
	Users []string `json:"users"`
}

// EscalationInput is a rule's escalation as set: after a Go duration
// ("24h"), also Role and Users.
type EscalationInput struct {
	After string   `json:"after"`
	Role  string   `json:"role"`
	Users []string `json:"users"`
}

// maxNamed bounds the users an audience names: 50 is a department, and
// the list is read on every decision.
const maxNamed = 50

// checkAudience validates in's shape (the users are resolved in the
// change's transaction), failing field+".role" or field+".users".
func checkAudience(field string, role string, users []string, fail func(field, format string, args ...any)) {
	switch identity.Role(role) {
	case "", identity.RoleApprover, identity.RoleAdmin:
	default:
		fail(field+".role", "must be approver (every approver and admin) or admin (admins only)")
	}
	switch {
	case role == "" && len(users) == 0:
		fail(field, "must name a role or users")
	case len(users) > maxNamed:
		fail(field+".users", "must name at most %d users", maxNamed)
	}
	for _, u := range users {
		if strings.TrimSpace(u) == "" {
			fail(field+".users", "must be usernames")
			break
		}
	}
}

// checkDeciders validates a rule's deciders and escalation, for a policy
// whose requests wait pendingTTL.
func checkDeciders(in RuleInput, pendingTTL time.Duration, fail func(field, format string, args ...any)) {
	if in.Deciders != nil {
		checkAudience("deciders", in.Deciders.Role, in.Deciders.Users, fail)
	}
	e := in.Escalation
	if e == nil {
		return
	}
	if in.Deciders == nil {
		fail("escalation", "adds deciders to a rule that names its deciders; without deciders every approver and admin decides already")
	}
	d, err := time.ParseDuration(e.After)
	switch {
	case err != nil || d <= 0:
		fail("escalation.after", "must be a positive duration such as 24h")
	case d < time.Minute:
		fail("escalation.after", "must be at least 1m")
	case d >= pendingTTL:
		fail("escalation.after", "must be shorter than the %s a request waits for its decisions, or it never escalates", pendingTTL)
	}
	checkAudience("escalation", e.Role, e.Users, fail)
}

// audienceResolve turns an input's usernames into users who may decide,
// failing field+".users" for a name that is no enabled approver or admin.
func audienceResolve(ctx context.Context, tx pgx.Tx, field, role string, names []string, fail func(field, format string, args ...any)) (*Audience, error) {
	au := &Audience{Role: identity.Role(role)}
	for _, name := range names {
		u, err := identity.UserGetByUsername(ctx, tx, strings.TrimSpace(name))
		if pe, ok := problem.As(err); ok && pe.Code == problem.CodeNotFound {
			fail(field+".users", "%q is no user", name)
			continue
		}
		if err != nil {
			return nil, err
		}
		if u.Disabled || !u.Role.CanDecide() {
			fail(field+".users", "%q is not an enabled approver or admin", name)
			continue
		}
		if !slices.ContainsFunc(au.Users, func(r UserRef) bool { return r.ID == u.ID }) {
			au.Users = append(au.Users, UserRef{ID: u.ID, Username: u.Username})
		}
	}
	slices.SortFunc(au.Users, func(a, b UserRef) int { return strings.Compare(a.Username, b.Username) })
	return au, nil
}

// rulesResolve fills r's deciders and escalation from in, naming every
// user that cannot decide; it writes nothing.
func rulesResolve(ctx context.Context, tx pgx.Tx, r *Rule, in RuleInput) error {
	var bad []problem.FieldError
	fail := func(field, format string, args ...any) {
		bad = append(bad, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	var err error
	if in.Deciders != nil {
		if r.Deciders, err = audienceResolve(ctx, tx, "deciders", in.Deciders.Role, in.Deciders.Users, fail); err != nil {
			return err
		}
	}
	if e := in.Escalation; e != nil {
		d, _ := time.ParseDuration(e.After) // checked by checkDeciders
		au, err := audienceResolve(ctx, tx, "escalation", e.Role, e.Users, fail)
		if err != nil {
			return err
		}
		r.Escalation = &Escalation{After: Duration(d), Audience: *au}
	}
	if len(bad) > 0 {
		return problem.Validation(bad...)
	}
	return nil
}

// sameDeciders reports whether two rules name the same deciders and
// escalation.
func sameDeciders(a, b *Rule) bool {
	eqAud := func(x, y *Audience) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.Role == y.Role && slices.Equal(x.ids(), y.ids())
	}
	if !eqAud(a.Deciders, b.Deciders) {
		return false
	}
	if a.Escalation == nil || b.Escalation == nil {
		return a.Escalation == b.Escalation
	}
	return a.Escalation.After == b.Escalation.After && eqAud(&a.Escalation.Audience, &b.Escalation.Audience)
}

// ---- escalation ----

// EscalateDue escalates the pending requests whose escalation fell due at
// the service clock's now; the scheduled job (app's outbox) runs it, and
// a decision escalates a due request it finds first. It returns how many
// it escalated.
func (s *Service) EscalateDue(ctx context.Context) (int, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (int, error) {
		now := s.policy.now()
		due, err := approvalsEscalationDueLockTx(ctx, tx, now, expireBatch)
		if err != nil {
			return 0, err
		}
		for _, a := range due {
			if err := s.escalateTx(ctx, tx, a, now, systemActor); err != nil {
				return 0, err
			}
		}
		return len(due), nil
	})
}

// escalateTx records on the locked request a, due for escalation, that its
// escalation's audience may decide it from now: audited, announced, and
// emitted as approval.escalated (mailed to whom it adds, and sent to
// webhooks). The approvals it needs stay as they were.
func (s *Service) escalateTx(ctx context.Context, tx pgx.Tx, a *Approval, now time.Time, by eventActor) error {
	if err := approvalEscalateTx(ctx, tx, a, now); err != nil {
		return err
	}
	if err := s.emit.EmitTx(ctx, tx, events.New(events.ApprovalEscalated, now, a)); err != nil {
		return err
	}
	e := a.Escalation
	if _, err := audit.AppendTx(ctx, tx, by.event("approval.escalated", a, map[string]any{
		"due_at": e.At.Format(time.RFC3339Nano), "to": e.Audience, "deciders": a.Deciders,
		"approvals": a.Approvals, "required_approvals": a.RequiredApprovals,
	})); err != nil {
		return err
	}
	return approvalNotifyTx(ctx, tx, a)
}

// ---- who decides ----

// standing is what the deciding transaction knows of a decider: their
// delegations in force at now, read under share locks (delegation.go).
type standing struct {
	user *identity.User
	// from are the delegators whose approvals the user holds now, by
	// username, with their own standing.
	from []delegatorRef
	// to is whom the user handed their approvals to, if anyone.
	to *UserRef
}

type delegatorRef struct {
	UserRef
	authority
}

// decider returns on whose authority u decides a (nil: their own), or
// the refusal: they are not among a's deciders, nor hold the approvals
// of anyone who is and may decide; or a voice of theirs already spoke
// (ErrSpoken's conflict). Runs under a's row lock, so two decisions of
// one voice serialise.
func (st *standing) decider(a *Approval) (*UserRef, error) {
	u := st.user
	for _, d := range a.Decisions {
		if !d.Counts {
			continue
		}
		// The voice of a delegation: the delegate and whoever handed them
		// their approvals, while it runs; and a delegate's decision for
		// someone stays theirs after it ends.
		switch {
		case d.OnBehalfOf != nil && d.OnBehalfOf.ID == u.ID:
			return nil, spokenProblem(a, fmt.Sprintf("%s already decided %s for you, holding your approvals", d.Approver.Username, d.Decision))
		case st.to != nil && d.Approver.ID == st.to.ID:
			return nil, spokenProblem(a, fmt.Sprintf("%s holds your approvals and already decided %s: the two of you are one voice while the delegation runs", d.Approver.Username, d.Decision))
		case slices.ContainsFunc(st.from, func(f delegatorRef) bool { return f.ID == d.Approver.ID }):
			return nil, spokenProblem(a, fmt.Sprintf("%s, whose approvals you hold, already decided %s: the two of you are one voice while the delegation runs", d.Approver.Username, d.Decision))
		}
	}
	if a.among(u.ID, u.Role) {
		return nil, nil
	}
	for _, f := range st.from {
		// One hop: the delegator must be a decider on their own standing.
		if f.lapse() == "" && f.ID != a.RequestedBy.ID && a.among(f.ID, f.role) {
			ref := f.UserRef
			return &ref, nil
		}
	}
	return nil, problem.Forbidden(fmt.Sprintf("you are not among the deciders of approval %s, and hold the approvals of none of them", a.ID))
}

func spokenProblem(a *Approval, why string) *problem.Error {
	return refusal(http.StatusConflict, CodeAlreadyDecided, fmt.Sprintf("approval %s: %s", a.ID, why), a)
}

// decidersCount counts the enabled approvers and admins other than
// requester whom rule (nil: no tier reached) lets decide, its escalation
// included: a request they can all decide in time is not refused
// NO_ELIGIBLE_APPROVER.
func decidersCount(ctx context.Context, tx pgx.Tx, requester uuid.UUID, rule *Rule) (int, error) {
	if rule == nil || rule.Deciders == nil {
		return identity.UserCountDeciders(ctx, tx, requester)
	}
	var esc *Audience
	if rule.Escalation != nil {
		esc = &rule.Escalation.Audience
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE role IN ('approver', 'admin') AND NOT disabled AND id <> $1
		AND (role = $2 OR $2 = 'approver' OR id = ANY($3) OR role = $4 OR $4 = 'approver' OR id = ANY($5))`,
		requester, rule.Deciders.role(), rule.Deciders.ids(), esc.role(), esc.ids()).Scan(&n)
	return n, store.MapError(err, "approvers")
}

// DecidersOf returns who may decide a at now, as the deciding transaction
// judges it: the enabled approvers and admins other than the requester
// among its deciders (escalation included once it happened), and those
// holding the approvals of one of them through a delegation running at
// now who may decide themselves. The mails go to them.
func DecidersOf(ctx context.Context, db store.Executor, a *Approval, now time.Time) ([]uuid.UUID, error) {
	var esc *Audience
	if e := a.Escalation; e != nil && e.EscalatedAt != nil {
		esc = &e.Audience
	}
	rows, err := db.Query(ctx, `
		WITH own AS (
			SELECT id FROM users WHERE role IN ('approver', 'admin') AND NOT disabled AND id <> $1
			  AND (NOT $2 OR role = $3 OR $3 = 'approver' OR id = ANY($4) OR role = $5 OR $5 = 'approver' OR id = ANY($6)))
		SELECT id FROM own
		UNION
		SELECT d.delegate_id FROM approval_delegations d JOIN own ON own.id = d.delegator_id JOIN users b ON b.id = d.delegate_id
		WHERE d.valid_from <= $7 AND d.valid_until > $7 AND d.ended_at IS NULL
		  AND b.role IN ('approver', 'admin') AND NOT b.disabled AND b.id <> $1`,
		a.RequestedBy.ID, a.Deciders != nil, a.Deciders.role(), a.Deciders.ids(), esc.role(), esc.ids(), now)
	if err != nil {
		return nil, store.MapError(err, "deciders")
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, store.MapError(err, "deciders")
}
