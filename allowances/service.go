package allowances

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/text"
	"github.com/jackc/pgx/v5"
)

// Service grants, reads, revokes and draws standing allowances.
type Service struct {
	db   store.Executor
	gate capability.Gate
	now  func() time.Time
}

var _ approvals.Allowances = (*Service)(nil)

// NewService returns a service over db whose grants pass gate, on the
// clock now (nil: time.Now), which must be the gate's.
func NewService(db store.Executor, gate capability.Gate, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: db, gate: gate, now: now}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Bounds of a grant. A year is the longest budget anyone plans as
// routine (a fiscal year's monthly runs); 100,000 calls and 100 customers
// keep a row and its snapshot small.
const (
	maxValidity  = 366 * 24 * time.Hour
	maxCount     = 100000
	maxCustomers = 100
	maxReasonLen = 2000
)

// grantInput is grant-allowance's input.
type grantInput struct {
	Kind        Kind        `json:"capability"`
	CustomerIDs []uuid.UUID `json:"customer_ids"`
	Currency    string      `json:"currency"`
	MaxTotal    int64       `json:"max_total"`
	MaxCount    int         `json:"max_count"`
	ValidUntil  time.Time   `json:"valid_until"`
	Reason      string      `json:"reason"`
}

// check refuses what can never be granted at now, naming every field.
// The schema has checked types and formats; this checks the rules a
// schema cannot say, and the customers.
func (s *Service) check(ctx context.Context, db store.Executor, in *grantInput, now time.Time) error {
	var bad []problem.FieldError
	fail := func(field, format string, args ...any) {
		bad = append(bad, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(in.Kind.Capabilities()) == 0 {
		fail("capability", "must be one of issue, credit, void, payments")
	}
	currencyOK := money.Valid(in.Currency)
	if !currencyOK {
		fail("currency", "must be an ISO 4217 code such as EUR")
	}
	if in.MaxTotal < 1 || in.MaxTotal > approvals.MaxThreshold {
		fail("max_total", "must be from 1 to %d minor units of the currency", approvals.MaxThreshold)
	}
	if in.MaxCount < 1 || in.MaxCount > maxCount {
		fail("max_count", "must be from 1 to %d calls", maxCount)
	}
	switch {
	case !in.ValidUntil.After(now):
		fail("valid_until", "must be in the future (it is %s now)", now.Format(time.RFC3339))
	case in.ValidUntil.Sub(now) > maxValidity:
		fail("valid_until", "must be at most 366 days ahead: a longer budget is no standing allowance but a policy; ask an admin for an approval rule")
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if r, unstorable := jsondoc.UnstorableText(in.Reason); unstorable {
		fail("reason", "%s", r.Message())
	} else if err := text.Prose(in.Reason); err != nil {
		fail("reason", "%s", err)
	} else if !text.Shows(in.Reason) || len(in.Reason) > maxReasonLen {
		fail("reason", "is required (at most %d bytes): say what the budget is for, so approvers know what they let through", maxReasonLen)
	}
	if in.CustomerIDs != nil {
		if err := s.checkCustomers(ctx, db, in, currencyOK, fail); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return problem.Validation(bad...)
	}
	return nil
}

// checkCustomers checks a scope of customers: some, each once, each
// existing, each billing in the allowance's currency by default (a
// budget in EUR for a customer invoiced in USD would never be drawn).
func (s *Service) checkCustomers(ctx context.Context, db store.Executor, in *grantInput, currencyOK bool, fail func(string, string, ...any)) error {
	switch n := len(in.CustomerIDs); {
	case n == 0:
		fail("customer_ids", "must name at least one customer, or be null for every customer")
		return nil
	case n > maxCustomers:
		fail("customer_ids", "must name at most %d customers (null: every customer)", maxCustomers)
		return nil
	}
	sorted := slices.Clone(in.CustomerIDs)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	if len(slices.Compact(sorted)) != len(in.CustomerIDs) {
		fail("customer_ids", "names a customer twice")
		return nil
	}
	currencies, err := customerCurrencies(ctx, db, in.CustomerIDs)
	if err != nil {
		return err
	}
	for i, id := range in.CustomerIDs {
		field := fmt.Sprintf("customer_ids/%d", i)
		switch c, ok := currencies[id]; {
		case !ok:
			fail(field, "customer %s does not exist", id)
		case currencyOK && c != in.Currency:
			fail(field, "customer %s is invoiced in %s, not %s: an allowance covers one currency", id, c, in.Currency)
		}
	}
	return nil
}

func customerCurrencies(ctx context.Context, db store.Executor, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	rows, err := db.Query(ctx, `SELECT id, currency FROM customers WHERE id = ANY ($1)`, ids)
	if err != nil {
		return nil, store.MapError(err, "customers")
	}
	out := map[uuid.UUID]string{}
	var (
		id uuid.UUID
		c  string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &c}, func() error {
		out[id] = c
		return nil
	})
	return out, store.MapError(err, "customers")
}

// grantNamespace derives an allowance's id from its requester and the
// grant's effective input: the approval binds to that id, and the same
// call, approved, creates that one allowance once.
var grantNamespace = uuid.MustParse("5b0e3a52-7f0c-4c1e-9d55-6a1f0c4b9e21")

// Grant is the grant-allowance capability (consequential): checks
// (nothing is written when they fail), the gate (bound to the exact
// grant, judged by the tiers of what it covers at its total), then the
// allowance and its audit event.
func (s *Service) Grant(ctx context.Context, call capability.Call) (any, error) {
	if call.Principal.Role != identity.RoleClerk && call.Principal.Role != identity.RoleAdmin {
		return nil, problem.Forbidden(fmt.Sprintf("the %s role decides allowances; a clerk or an admin asks for them", call.Principal.Role))
	}
	var in grantInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Allowance, error) {
		now := s.clock()
		if err := s.check(ctx, tx, &in, now); err != nil {
			return nil, err
		}
		id := uuid.NewSHA1(grantNamespace, []byte(call.Principal.UserID.String()+call.InputHash))
		if exists, err := allowanceExists(ctx, tx, id); err != nil || exists {
			if err == nil {
				err = problem.Conflict(CodeExists, fmt.Sprintf(
					"allowance %s was granted for this exact request already; a new one needs a different request (another reason or valid_until)", id)).
					With("allowance_id", id.String())
			}
			return nil, err
		}
		a := &Allowance{ID: id, Kind: in.Kind, CustomerIDs: in.CustomerIDs, Currency: in.Currency,
			MaxTotal: in.MaxTotal, MaxCount: in.MaxCount, RemainingTotal: in.MaxTotal, RemainingCount: in.MaxCount,
			ValidUntil: in.ValidUntil.UTC(), Reason: in.Reason, RequestedBy: UserRef{ID: call.Principal.UserID, Username: call.Principal.Username},
			CreatedAt: now, Capabilities: in.Kind.Capabilities()}
		snap, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		grant, err := s.gate.AuthorizeTx(ctx, tx, call, capability.Target{
			Type: "allowance", ID: id.String(), Amount: in.MaxTotal, Currency: in.Currency, Snapshot: snap,
		})
		if err != nil {
			return nil, err
		}
		if a.ApprovalID, err = uuid.Parse(grant.ApprovalID); err != nil {
			return nil, fmt.Errorf("grant-allowance: the gate granted no approval: %w", err)
		}
		if a.Deciders, err = approvedByTx(ctx, tx, a.ApprovalID); err != nil {
			return nil, err
		}
		if err := allowanceInsertTx(ctx, tx, a); err != nil {
			return nil, err
		}
		if err := appendEvent(ctx, tx, call, "allowance.granted", a.ID, map[string]any{
			"approval_id": grant.ApprovalID, "invocation_id": grant.InvocationID, "capability": string(a.Kind),
			"customer_ids": a.CustomerIDs, "currency": a.Currency, "max_total": a.MaxTotal, "max_count": a.MaxCount,
			"valid_until": a.ValidUntil.Format(time.RFC3339Nano), "deciders": a.Deciders,
		}); err != nil {
			return nil, err
		}
		return allowanceGet(ctx, tx, id, now, "")
	})
}

// JudgedAlsoBy is approvals.Policy.JudgedAlsoBy for grant-allowance: a
// budget is approved as a call of what it covers, for its whole total,
// would be.
func JudgedAlsoBy(capName string, input json.RawMessage) []string {
	if capName != CapGrant {
		return nil
	}
	var in struct {
		Kind Kind `json:"capability"`
	}
	_ = json.Unmarshal(input, &in) // validated input; an unknown kind covers nothing
	return in.Kind.Capabilities()
}

func appendEvent(ctx context.Context, tx pgx.Tx, call capability.Call, typ string, id uuid.UUID, data map[string]any) error {
	_, err := audit.AppendTx(ctx, tx, audit.Event{Type: typ, ActorID: call.Principal.UserID.String(), Actor: call.Principal.Username,
		Via: string(call.Via), SubjectType: "allowance", SubjectID: id.String(), Data: data})
	return err
}

type idInput struct {
	ID uuid.UUID `json:"allowance_id"`
}

// GetCap is the get-allowance capability.
func (s *Service) GetCap(ctx context.Context, call capability.Call) (any, error) {
	var in idInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	return s.Get(ctx, in.ID)
}

// Get returns allowance id as it is now.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*Allowance, error) {
	return allowanceGet(ctx, s.db, id, s.clock(), "")
}

type listInput struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// ListCap is the list-allowances capability.
func (s *Service) ListCap(ctx context.Context, call capability.Call) (any, error) {
	var in listInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, fmt.Errorf("%s: decode effective input: %w", call.Name, err)
	}
	p := page.Request{Limit: in.Limit}
	if in.Cursor != "" {
		var err error
		if p.After, err = page.ParseCursor(in.Cursor); err != nil {
			return nil, err
		}
	}
	return s.List(ctx, ListParams{Page: p})
}

// List returns a page of allowances, newest first.
func (s *Service) List(ctx context.Context, p ListParams) (page.List[*Allowance], error) {
	rows, err := allowanceList(ctx, s.db, ListParams{Page: p.Page.Ahead()}, s.clock())
	if err != nil {
		return page.List[*Allowance]{}, err
	}
	return page.Of(rows, p.Page.Limit), nil
}

// Revoke ends allowance id at once, as approver or admin p arriving by
// via: no draw follows the commit (a draw waiting on the row sees it
// revoked and asks for an approval instead). Only an allowance not yet
// revoked or expired can be; an exhausted one can, so none is ever
// topped up unseen.
func (s *Service) Revoke(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID, reason string) (*Allowance, error) {
	reason = strings.TrimSpace(reason)
	if len(reason) > maxReasonLen {
		return nil, problem.Invalid("reason", "must be at most %d bytes", maxReasonLen)
	}
	if err := text.Prose(reason); err != nil {
		return nil, problem.Invalid("reason", "%s", err)
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Allowance, error) {
		// The revoker's row first, as deciding takes it (approvals'
		// live.go): a revoker demoted meanwhile revokes nothing.
		u, err := identity.UserLockShareTx(ctx, tx, p.UserID)
		if err != nil {
			return nil, err
		}
		if u.Disabled || !u.Role.CanDecide() {
			return nil, problem.Forbidden("only enabled approver and admin users revoke allowances")
		}
		now := s.clock()
		a, err := allowanceGet(ctx, tx, id, now, " FOR UPDATE OF a")
		if err != nil {
			return nil, err
		}
		if a.Status == StatusRevoked || a.Status == StatusExpired {
			return nil, problem.Conflict(CodeNotActive, fmt.Sprintf("allowance %s is %s already", a.ID, a.Status)).With("allowance_status", string(a.Status))
		}
		if err := allowanceRevokeTx(ctx, tx, id, u.ID, reason, now); err != nil {
			return nil, err
		}
		by := capability.Call{Principal: p, Via: via}
		if err := appendEvent(ctx, tx, by, "allowance.revoked", id, map[string]any{
			"reason": reason, "remaining_total": a.RemainingTotal, "remaining_count": a.RemainingCount,
		}); err != nil {
			return nil, err
		}
		return allowanceGet(ctx, tx, id, now, "")
	})
}

// DrawTx implements approvals.Allowances: the gate calls it, in the
// effect's transaction, for a call that would otherwise ask for an
// approval of needs approvers; an allowance its deciders approved stands
// in only for calls that need no more of them than approved it (a call
// the policy asks more of, say a large invoice in a budget approved by
// one, asks for its own approval). A call drawing counts once and its amount's magnitude (a
// credit moves as much as a charge) against the allowance; the draw and
// what is left are in the audit chain.
func (s *Service) DrawTx(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target, needs int, inv uuid.UUID, now time.Time) (*capability.AllowanceDraw, error) {
	c, ok := covers[call.Name]
	if !ok {
		return nil, nil
	}
	amount := target.Amount
	if amount < 0 {
		amount = -amount
	}
	d, found, err := allowanceDrawTx(ctx, tx, c.kind, target.Currency, target.CustomerID, call.Principal.UserID, amount, needs, now)
	if err != nil || !found {
		return nil, err
	}
	out := &capability.AllowanceDraw{ID: d.id, RemainingTotal: d.remainingTotal, RemainingCount: d.remainingCount, Currency: target.Currency}
	out.Note = note(c.verb, out)
	if err := appendEvent(ctx, tx, call, "allowance.drawn", d.id, map[string]any{
		"capability": call.Name, "invocation_id": inv.String(), "input_hash": call.InputHash,
		"target_type": target.Type, "target_id": target.ID, "target_version": target.Version,
		"amount": amount, "currency": target.Currency, "remaining_total": d.remainingTotal, "remaining_count": d.remainingCount,
	}); err != nil {
		return nil, err
	}
	return out, nil
}
