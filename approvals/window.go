package approvals

// Limits over time (ADR-0022 §3): a windowed tier compares the sum of the
// capability's effects in its window and scope, plus the call. The gate
// records every effect it lets through (effectInsert) and sums them under
// a lock per scope key, in the effect's transaction.

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Scope says whose effects a windowed tier adds up.
type Scope string

// The scopes: the same requester, the same customer, or both.
const (
	ScopeRequester         Scope = "requester"
	ScopeCustomer          Scope = "customer"
	ScopeRequesterCustomer Scope = "requester_customer"
)

// ParseScope validates a scope name.
func ParseScope(s string) (Scope, error) {
	switch sc := Scope(s); sc {
	case ScopeRequester, ScopeCustomer, ScopeRequesterCustomer:
		return sc, nil
	}
	return "", problem.Invalid("scope", "must be requester, customer or requester_customer")
}

func (sc Scope) requester() bool { return sc == ScopeRequester || sc == ScopeRequesterCustomer }
func (sc Scope) customer() bool  { return sc == ScopeCustomer || sc == ScopeRequesterCustomer }

// MaxWindowDays bounds a window: a year, leap day included.
const MaxWindowDays = 366

// WindowSum is what a windowed tier counted for a call: Count effects of
// Sum minor units of Currency in Scope since Since, newest first in
// Targets (at most maxCounted), and the call's own Amount on top.
type WindowSum struct {
	Days     int       `json:"window_days"`
	Scope    Scope     `json:"scope"`
	Since    time.Time `json:"since"`
	Currency string    `json:"currency"`
	Sum      int64     `json:"sum"`
	Count    int       `json:"count"`
	Amount   int64     `json:"amount"`
	Targets  []string  `json:"targets"`
}

// Total is the amount the windowed tiers compare: the sum and the call.
func (w WindowSum) Total() int64 { return addCapped(w.Sum, w.Amount) }

// maxCounted bounds the targets a request records of what a window
// counted: the approver reads the newest; the count and sum say the rest.
const maxCounted = 50

// findWindow returns the entry of windows for r's window and scope, nil
// when r has no window or windows lacks it.
func findWindow(windows []WindowSum, r *Rule) *WindowSum {
	if r.WindowDays == nil {
		return nil
	}
	for i := range windows {
		if windows[i].Days == *r.WindowDays && windows[i].Scope == *r.Scope {
			return &windows[i]
		}
	}
	return nil
}

// windowsOf returns the distinct windows (days and scope) of the tiers
// that apply to a call of capName in currency, in a stable order.
func (s *RuleSet) windowsOf(capName, currency string) []WindowSum {
	want := s.tiersFor(capName, currency)
	var out []WindowSum
	for _, r := range s.Rules {
		if r.Capability != capName || r.Currency != want || r.WindowDays == nil {
			continue
		}
		if findWindow(out, &r) == nil {
			out = append(out, WindowSum{Days: *r.WindowDays, Scope: *r.Scope})
		}
	}
	slices.SortFunc(out, func(a, b WindowSum) int {
		if a.Days != b.Days {
			return a.Days - b.Days
		}
		return cmpString(string(a.Scope), string(b.Scope))
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// scopeKey is the advisory lock of the effects of capName in currency by
// requester and/or customer, as scope groups them: a 64-bit FNV-1a hash.
// A collision only makes two scopes wait on each other.
func scopeKey(capName, currency string, scope Scope, requester, customer uuid.UUID) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "policy-window\x00%s\x00%s\x00%s", capName, currency, scope)
	if scope.requester() {
		h.Write(requester[:])
	}
	if scope.customer() {
		h.Write(customer[:])
	}
	return int64(h.Sum64())
}

// windowsSumTx fills in each window of ws for a call of capName by
// requester on target at now: the scope locks first, all of them, in
// ascending key order (so two calls never wait on each other crosswise),
// held to COMMIT; then the sums, read after the locks are held, so they
// include every effect committed by the calls that held them before.
func windowsSumTx(ctx context.Context, tx pgx.Tx, ws []WindowSum, capName string, requester uuid.UUID, target capability.Target, now time.Time) error {
	if len(ws) == 0 {
		return nil
	}
	keys := make([]int64, 0, len(ws))
	for _, w := range ws {
		keys = append(keys, scopeKey(capName, target.Currency, w.Scope, requester, target.CustomerID))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k`, keys); err != nil {
		return store.MapError(err, "approval policy window")
	}
	customer := nullUUID(target.CustomerID)
	for i := range ws {
		w := &ws[i]
		w.Since, w.Currency, w.Amount = now.AddDate(0, 0, -w.Days), target.Currency, magnitude(target.Amount)
		err := tx.QueryRow(ctx, `
			SELECT coalesce(sum(e.amount), 0), count(*), coalesce((array_agg(e.target_type || ':' || e.target_id ORDER BY e.at DESC))[1:$7], '{}')
			FROM policy_effects e
			WHERE e.capability = $1 AND e.currency = $2 AND e.at > $3 AND e.at <= $8
			  AND (NOT $4 OR e.requester = $5) AND (NOT $6 OR e.customer_id IS NOT DISTINCT FROM $9)`,
			capName, target.Currency, w.Since, w.Scope.requester(), requester, w.Scope.customer(), maxCounted, now, customer).
			Scan(&w.Sum, &w.Count, &w.Targets)
		if err != nil {
			return store.MapError(err, "approval policy window")
		}
	}
	return nil
}

func nullUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// effectInsertSQL records an effect the gate let through; the windows sum
// these rows. Its arguments are effectArgs'.
const effectInsertSQL = `INSERT INTO policy_effects (id, capability, requester, customer_id, amount, currency, at, target_type, target_id, approval_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// effectArgs are effectInsertSQL's arguments for call on target at now,
// let through by approval (nil: none needed).
func effectArgs(call capability.Call, target capability.Target, approval *uuid.UUID, now time.Time) []any {
	return []any{uuid.Must(uuid.NewV7()), call.Name, call.Principal.UserID, nullUUID(target.CustomerID),
		magnitude(target.Amount), target.Currency, now, target.Type, target.ID, approval}
}

// effectInsertTx records the effect of call on target at now, let through
// with no approval.
func effectInsertTx(ctx context.Context, tx pgx.Tx, call capability.Call, target capability.Target, now time.Time) error {
	_, err := tx.Exec(ctx, effectInsertSQL, effectArgs(call, target, nil, now)...)
	return store.MapError(err, "approval policy effect")
}
