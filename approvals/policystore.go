package approvals

// The policy's SQL (migration 00012): its rules, versions and lock, beside
// store.go's requests and decisions.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

const ruleColumns = `r.id, r.capability, coalesce(r.currency, '*'), r.min_amount, r.min_amount_major, r.approvers, r.window_days, r.scope, r.from_version, r.to_version`

// ruleOrder lists a capability's any-currency tiers first, then each
// currency's, lowest threshold first.
const ruleOrder = ` ORDER BY r.capability, r.currency IS NOT NULL, r.currency, coalesce(r.min_amount, r.min_amount_major), r.window_days NULLS FIRST, r.scope NULLS FIRST`

func scanRule(row pgx.Row) (Rule, error) {
	var r Rule
	err := row.Scan(&r.ID, &r.Capability, &r.Currency, &r.MinAmount, &r.MinAmountMajor, &r.Approvers, &r.WindowDays, &r.Scope, &r.FromVersion, &r.ToVersion)
	return r, err
}

func collectRules(rows pgx.Rows) ([]Rule, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Rule, error) { return scanRule(r) })
}

// rulesInForceGet returns the policy version in force with the rules of
// capName for currency and for any currency. One statement reads both,
// so they come from one snapshot.
func rulesInForceGet(ctx context.Context, db store.Executor, capName string, currency string) (*RuleSet, error) {
	rows, err := db.Query(ctx, `
		SELECT v.version, `+ruleColumns+`
		FROM (SELECT max(version) AS version FROM approval_policy_versions) v
		LEFT JOIN approval_policy_rules r ON r.to_version IS NULL AND r.capability = $1 AND (r.currency = $2 OR r.currency IS NULL)`,
		capName, currency)
	if err != nil {
		return nil, store.MapError(err, "approval policy")
	}
	defer rows.Close()
	set := &RuleSet{}
	for rows.Next() {
		// The columns of the rule are NULL when the capability has none.
		var (
			id               *uuid.UUID
			capN, cur        *string
			minA, minM, from *int64
			approvers, days  *int
			scope            *Scope
			to               *int64
		)
		if err := rows.Scan(&set.Version, &id, &capN, &cur, &minA, &minM, &approvers, &days, &scope, &from, &to); err != nil {
			return nil, store.MapError(err, "approval policy")
		}
		if id != nil {
			set.Rules = append(set.Rules, Rule{ID: *id, Capability: *capN, Currency: *cur, MinAmount: minA, MinAmountMajor: minM,
				Approvers: *approvers, WindowDays: days, Scope: scope, FromVersion: *from, ToVersion: to})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, store.MapError(err, "approval policy")
	}
	return set, nil
}

// ruleSetGet returns the policy at version (0: the one in force), 404
// for a version that never was.
func ruleSetGet(ctx context.Context, db store.Executor, version int64) (*RuleSet, error) {
	set := &RuleSet{}
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var (
			by   *uuid.UUID
			name *string
		)
		err := db.QueryRow(ctx, `
			SELECT v.version, v.changed_at, v.changed_by, u.username
			FROM approval_policy_versions v LEFT JOIN users u ON u.id = v.changed_by
			WHERE v.version = coalesce(nullif($1, 0), (SELECT max(version) FROM approval_policy_versions))`, version).
			Scan(&set.Version, &set.ChangedAt, &by, &name)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.NotFound(fmt.Sprintf("approval policy version %d", version))
		}
		if err != nil {
			return store.MapError(err, "approval policy")
		}
		set.ChangedAt = set.ChangedAt.UTC()
		if by != nil {
			set.ChangedBy = &UserRef{ID: *by, Username: *name}
		}
		rows, err := db.Query(ctx, `SELECT `+ruleColumns+` FROM approval_policy_rules r
			WHERE r.from_version <= $1 AND (r.to_version IS NULL OR r.to_version > $1)`+ruleOrder, set.Version)
		if err != nil {
			return store.MapError(err, "approval policy")
		}
		if set.Rules, err = collectRules(rows); err != nil {
			return store.MapError(err, "approval policy")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// policyLockKey serialises policy changes (pg_advisory_xact_lock), so two
// admins never make the same version. Readers and the gate never take it.
const policyLockKey int64 = 0x706f6c6963790000 // "policy\0\0"

// policyLockTx takes the policy lock and returns the version in force,
// read after the lock is held.
func policyLockTx(ctx context.Context, tx pgx.Tx) (int64, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, policyLockKey); err != nil {
		return 0, store.MapError(err, "approval policy")
	}
	var v int64
	err := tx.QueryRow(ctx, `SELECT max(version) FROM approval_policy_versions`).Scan(&v)
	return v, store.MapError(err, "approval policy")
}

// policyVersionInsertTx records version as made by by at now.
func policyVersionInsertTx(ctx context.Context, tx pgx.Tx, version int64, by uuid.UUID, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO approval_policy_versions (version, changed_at, changed_by) VALUES ($1, $2, $3)`, version, now, by)
	return store.MapError(err, "approval policy")
}

// ruleInForceGet returns the rule in force with id, or false.
func ruleInForceGet(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Rule, bool, error) {
	r, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleColumns+` FROM approval_policy_rules r WHERE r.id = $1 AND r.to_version IS NULL`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Rule{}, false, nil
	}
	return r, err == nil, store.MapError(err, "approval rule")
}

// ruleAtGet returns the rule in force for r's capability, currency,
// threshold, window and scope, or false.
func ruleAtGet(ctx context.Context, tx pgx.Tx, r Rule) (Rule, bool, error) {
	old, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleColumns+` FROM approval_policy_rules r
		WHERE r.to_version IS NULL AND r.capability = $1 AND coalesce(r.currency, '*') = $2
		  AND coalesce(r.min_amount, r.min_amount_major) = $3
		  AND r.window_days IS NOT DISTINCT FROM $4 AND r.scope IS NOT DISTINCT FROM $5`, r.Capability, r.Currency, r.key(), r.WindowDays, r.Scope))
	if errors.Is(err, pgx.ErrNoRows) {
		return Rule{}, false, nil
	}
	return old, err == nil, store.MapError(err, "approval rule")
}

// ruleRetireTx takes rule id out of force as of version.
func ruleRetireTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, version int64) error {
	_, err := tx.Exec(ctx, `UPDATE approval_policy_rules SET to_version = $2 WHERE id = $1`, id, version)
	return store.MapError(err, "approval rule")
}

// ruleInsertTx puts r in force from r.FromVersion.
func ruleInsertTx(ctx context.Context, tx pgx.Tx, r Rule) error {
	var currency *string
	if r.Currency != AnyCurrency {
		currency = &r.Currency
	}
	_, err := tx.Exec(ctx, `INSERT INTO approval_policy_rules (id, capability, currency, min_amount, min_amount_major, approvers, window_days, scope, from_version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, r.ID, r.Capability, currency, r.MinAmount, r.MinAmountMajor, r.Approvers, r.WindowDays, r.Scope, r.FromVersion)
	return store.MapError(err, "approval rule")
}
