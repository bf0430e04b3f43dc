package confirm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Postgres is the Registry serve uses: any replica can verify a
// confirmation, and single use holds across replicas because consumption is
// one UPDATE … WHERE used_at IS NULL.
type Postgres struct {
	db store.Executor
}

var _ Registry = (*Postgres)(nil)

// NewPostgres returns a registry over db (a pool, or a transaction to join).
func NewPostgres(db store.Executor) *Postgres { return &Postgres{db: db} }

const confirmationColumns = `id, capability, input_hash, conversation_id, principal_id, tool_call_id,
	created_at, expires_at, coalesce(decision, ''), coalesce(decision_reason, ''), used_at`

func scanConfirmation(row pgx.Row) (Confirmation, error) {
	var c Confirmation
	var decision string
	err := row.Scan(&c.ID, &c.Capability, &c.InputHash, &c.ConversationID, &c.Principal, &c.ToolCallID,
		&c.CreatedAt, &c.ExpiresAt, &decision, &c.DecisionReason, &c.UsedAt)
	if err != nil {
		return Confirmation{}, err
	}
	c.Decision = Decision(decision)
	c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
	if c.UsedAt != nil {
		u := c.UsedAt.UTC()
		c.UsedAt = &u
	}
	return c, nil
}

// mapErr maps no rows to ErrUnknown and everything else once through
// store.MapError.
func mapErr(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrUnknown
	}
	return store.MapError(err, "confirmation")
}

// Create implements Registry.
func (p *Postgres) Create(ctx context.Context, c Confirmation) (Confirmation, error) {
	const q = `INSERT INTO confirmations (id, capability, input_hash, conversation_id, principal_id, tool_call_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING ` + confirmationColumns
	out, err := scanConfirmation(p.db.QueryRow(ctx, q, c.ID, c.Capability, c.InputHash, c.ConversationID, c.Principal, c.ToolCallID, c.CreatedAt, c.ExpiresAt))
	if err != nil {
		return Confirmation{}, fmt.Errorf("create: %w", store.MapError(err, "confirmation"))
	}
	return out, nil
}

// Consume implements Registry. Concurrent consumers of one row queue on its
// row lock; under READ COMMITTED each later one re-reads used_at, finds it
// set and matches nothing, so exactly one gets the row.
func (p *Postgres) Consume(ctx context.Context, k Key, d Decision, reason string, now time.Time) (Confirmation, error) {
	const q = `UPDATE confirmations
SET used_at = $5, decision = $6, decision_reason = nullif($7, '')
WHERE id = $1 AND conversation_id = $2 AND principal_id = $3 AND capability = $4 AND used_at IS NULL
RETURNING ` + confirmationColumns
	c, err := scanConfirmation(p.db.QueryRow(ctx, q, k.ID, k.ConversationID, k.Principal, k.Capability, now, string(d), truncateReason(reason)))
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Confirmation{}, fmt.Errorf("consume: %w", store.MapError(err, "confirmation"))
	}
	// Nothing consumed: tell a used match (replayed) from no match. used_at
	// is never cleared, so this second read cannot misclassify.
	const qUsed = `SELECT EXISTS (SELECT 1 FROM confirmations
WHERE id = $1 AND conversation_id = $2 AND principal_id = $3 AND capability = $4)`
	var used bool
	if err := p.db.QueryRow(ctx, qUsed, k.ID, k.ConversationID, k.Principal, k.Capability).Scan(&used); err != nil {
		return Confirmation{}, fmt.Errorf("consume: %w", store.MapError(err, "confirmation"))
	}
	if used {
		return Confirmation{}, ErrReplayed
	}
	return Confirmation{}, ErrUnknown
}

// Get implements Registry.
func (p *Postgres) Get(ctx context.Context, id string) (Confirmation, error) {
	const q = `SELECT ` + confirmationColumns + ` FROM confirmations WHERE id = $1`
	c, err := scanConfirmation(p.db.QueryRow(ctx, q, id))
	if err != nil {
		return Confirmation{}, mapErr(err)
	}
	return c, nil
}

// Sweep implements Registry.
func (p *Postgres) Sweep(ctx context.Context, before time.Time) (int64, error) {
	const q = `DELETE FROM confirmations WHERE expires_at < $1`
	tag, err := p.db.Exec(ctx, q, before)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", store.MapError(err, "confirmation"))
	}
	return tag.RowsAffected(), nil
}
