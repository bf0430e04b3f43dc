package migrations_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// An invoice issued before migration 00040 records no seller (its
// document shows the settings as they are now: the migration cannot know
// what they were). Going below 00040 is refused once an issued invoice
// records its seller, and changes nothing.
func TestFrozenSellerMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	latest, err := b.p.GetDBVersion(ctx)
	require.NoError(t, err)
	_, err = b.p.DownTo(ctx, 39)
	require.NoError(t, err, "nothing records a seller yet")

	pool := storetest.PoolFor(t, b.url)
	// A customer as the schema at 00039 has them.
	cuID := uuid.Must(uuid.NewV7())
	_, err = pool.Exec(ctx, `INSERT INTO customers (id, name, currency, created_at, updated_at) VALUES ($1, 'Acme GmbH', 'EUR', now(), now())`, cuID)
	require.NoError(t, err)
	issue := func(number, seller string) uuid.UUID {
		t.Helper()
		id := uuid.Must(uuid.NewV7())
		cols, vals, args := "", "", []any{id, cuID, number}
		if seller != "" {
			cols, vals, args = ", seller", ", $4", append(args, seller)
		}
		_, err := pool.Exec(ctx, `
			INSERT INTO invoices (id, customer_id, status, number, currency, subtotal, tax_total, total, issued_at, bill_to, created_at, updated_at`+cols+`)
			VALUES ($1, $2, 'issued', $3, 'EUR', 100, 0, 100, now(), '{"name": "Acme GmbH", "email": ""}', now(), now()`+vals+`)`, args...)
		require.NoError(t, err)
		return id
	}
	before := issue("INV-T-1", "")
	_, err = b.p.Up(ctx)
	require.NoError(t, err)
	var recorded bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT seller IS NOT NULL FROM invoices WHERE id = $1`, before).Scan(&recorded))
	require.False(t, recorded, "issued before 00040: no seller recorded")

	since := issue("INV-T-2", `{"name": "Nordlicht GmbH", "address": "Hauptstraße 5", "tax_id": ""}`)
	_, err = b.p.ApplyVersion(ctx, 40, false)
	require.ErrorContains(t, err, "going below migration 00040 would lose it")
	v, err := b.p.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, latest, v)
	var name string
	require.NoError(t, pool.QueryRow(ctx, `SELECT seller ->> 'name' FROM invoices WHERE id = $1`, since).Scan(&name))
	require.Equal(t, "Nordlicht GmbH", name)
}
