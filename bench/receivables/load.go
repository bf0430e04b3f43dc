package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// load writes size issued invoices of one line each, created one after
// another over the last 400 days and due 30 days after: one in ten is
// open (a third of those partly paid), the others paid in full, with the
// payments behind them. Customers: one per hundred invoices, at most
// 1,000; currencies EUR 70 %, USD 20 %, JPY 10 % of the open and of the
// paid alike. The rows are what the
// service would have written, so the load skips the triggers (freeze,
// foreign keys, settlement checks) that would otherwise run per row, then
// VACUUM ANALYZE sets the visibility map the index-only scans read.
func load(ctx context.Context, pool *pgxpool.Pool, size int) error {
	customers := min(max(size/100, 1), 1000)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for _, q := range []string{
		`SET session_replication_role = replica`,
		fmt.Sprintf(`INSERT INTO customers (id, name, email, currency, created_at, updated_at)
			SELECT gen_random_uuid(), 'Customer ' || c, 'ap' || c || '@example.com', 'EUR',
				now() - interval '500 days' + c * interval '1 second', now()
			FROM generate_series(1, %d) c`, customers),
		`CREATE TEMP TABLE bench_customers AS SELECT row_number() OVER (ORDER BY created_at) - 1 AS k, id, name, email FROM customers`,
		fmt.Sprintf(`INSERT INTO invoices (id, customer_id, status, number, currency, due_date, subtotal, tax_total, total,
				amount_paid, issued_at, paid_at, version, created_at, updated_at, bill_to)
			SELECT gen_random_uuid(), c.id, CASE WHEN i %% 10 = 0 THEN 'issued' ELSE 'paid' END,
				'INV-B-' || lpad(i::text, 7, '0'), cur, (t AT TIME ZONE 'UTC')::date + 30, amt, 0, amt,
				CASE WHEN i %% 10 <> 0 THEN amt WHEN i %% 30 = 0 THEN amt / 2 ELSE 0 END,
				t, CASE WHEN i %% 10 <> 0 THEN t + interval '20 days' END, 2, t, t,
				jsonb_build_object('name', c.name, 'email', c.email)
			FROM generate_series(1, %[1]d) i
			CROSS JOIN LATERAL (SELECT now() - interval '400 days' + i * (interval '400 days' / %[1]d) AS t,
				CASE WHEN i / 10 %% 10 < 7 THEN 'EUR' WHEN i / 10 %% 10 < 9 THEN 'USD' ELSE 'JPY' END AS cur,
				10000 + (i %% 97) * 100 AS amt) x
			JOIN bench_customers c ON c.k = i %% %[2]d`, size, customers),
		`INSERT INTO invoice_lines (invoice_id, position, description, quantity, unit_amount, tax_rate_bps, amount, tax_amount)
			SELECT id, 0, 'Services', 1, total, 0, total, 0 FROM invoices`,
		`INSERT INTO payments (id, invoice_id, amount, currency, received_on, method, reference, recorded_at)
			SELECT gen_random_uuid(), id, amount_paid, currency, (issued_at AT TIME ZONE 'UTC')::date + 20, 'bank_transfer', number, issued_at
			FROM invoices WHERE amount_paid > 0`,
		`SET session_replication_role = DEFAULT`,
		`VACUUM (ANALYZE) customers, invoices, invoice_lines, payments`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	return nil
}
