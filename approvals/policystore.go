package approvals

// The policy's SQL (migration 00012): its rules, versions and lock, beside
// store.go's requests and decisions.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

var ruleColumns = `r.id, r.capability, coalesce(r.currency, '*'), r.min_amount, r.min_amount_major, r.approvers, r.window_days, r.scope, r.from_version, r.to_version,
	r.deciders_role, ` + usersJSON("r.deciders_ids") + `, r.escalate_after_s, r.escalate_role, ` + usersJSON("r.escalate_ids")

// ruleOrder lists a capability's any-currency tiers first, then each
// currency's, lowest threshold first.
const ruleOrder = ` ORDER BY r.capability, r.currency IS NOT NULL, r.currency, coalesce(r.min_amount, r.min_amount_major), r.window_days NULLS FIRST, r.scope NULLS FIRST`

func scanRule(row pgx.Row) (Rule, error) {
	var (
		r  Rule
		dc ruleDeciderCols
	)
	err := row.Scan(append([]any{&r.ID, &r.Capability, &r.Currency, &r.MinAmount, &r.MinAmountMajor, &r.Approvers, &r.WindowDays, &r.Scope, &r.FromVersion, &r.ToVersion},
		dc.dest()...)...)
	if err != nil {
		return r, err
	}
	r.Deciders, r.Escalation, err = dc.rule()
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
			dc               ruleDeciderCols
		)
		if err := rows.Scan(append([]any{&set.Version, &id, &capN, &cur, &minA, &minM, &approvers, &days, &scope, &from, &to}, dc.dest()...)...); err != nil {
			return nil, store.MapError(err, "approval policy")
		}
		if id != nil {
			r := Rule{ID: *id, Capability: *capN, Currency: *cur, MinAmount: minA, MinAmountMajor: minM,
				Approvers: *approvers, WindowDays: days, Scope: scope, FromVersion: *from, ToVersion: to}
			if r.Deciders, r.Escalation, err = dc.rule(); err != nil {
				return nil, err
			}
			set.Rules = append(set.Rules, r)
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
	var (
		after     *int64
		escalated *Audience
	)
	if e := r.Escalation; e != nil {
		s := int64(time.Duration(e.After) / time.Second)
		after, escalated = &s, &e.Audience
	}
	_, err := tx.Exec(ctx, `INSERT INTO approval_policy_rules (id, capability, currency, min_amount, min_amount_major, approvers, window_days, scope, from_version,
			deciders_role, deciders_ids, escalate_after_s, escalate_role, escalate_ids)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`, r.ID, r.Capability, currency, r.MinAmount, r.MinAmountMajor, r.Approvers, r.WindowDays, r.Scope, r.FromVersion,
		r.Deciders.role(), r.Deciders.ids(), after, escalated.role(), escalated.ids())
	return store.MapError(err, "approval rule")
}

// usersJSON selects the users of an id array column as a JSON array of
// {id, username} by username; NULL for a NULL array.
func usersJSON(col string) string {
	return `CASE WHEN ` + col + ` IS NULL THEN NULL ELSE (SELECT coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'username', x.username) ORDER BY x.username), '[]')
		FROM users x WHERE x.id = ANY(` + col + `)) END`
}

// ruleDeciderCols are a rule's deciders and escalation columns as read.
type ruleDeciderCols struct {
	role, escRole *string
	users, esc    []byte
	after         *int64
}

func (c *ruleDeciderCols) dest() []any { return []any{&c.role, &c.users, &c.after, &c.escRole, &c.esc} }

func (c *ruleDeciderCols) rule() (*Audience, *Escalation, error) {
	d, err := audienceOf(c.role, c.users)
	if err != nil || c.after == nil {
		return d, nil, err
	}
	e, err := audienceOf(c.escRole, c.esc)
	if err != nil {
		return nil, nil, err
	}
	if e == nil {
		e = &Audience{}
	}
	return d, &Escalation{After: Duration(time.Duration(*c.after) * time.Second), Audience: *e}, nil
}

// audienceOf reads an audience's role and users columns; nil when both
// are NULL.
func audienceOf(role *string, users []byte) (*Audience, error) {
	if role == nil && users == nil {
		return nil, nil
	}
	au := &Audience{}
	if role != nil {
		au.Role = identity.Role(*role)
	}
	if users != nil {
		if err := json.Unmarshal(users, &au.Users); err != nil {
			return nil, fmt.Errorf("audience users: %w", err)
		}
	}
	return au, nil
}
