package invoices_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func TestTransition(t *testing.T) {
	t.Parallel()
	all := []invoices.Status{invoices.StatusDraft, invoices.StatusIssued, invoices.StatusPaid, invoices.StatusVoid}
	allowed := map[invoices.Action]map[invoices.Status]invoices.Status{
		invoices.ActionUpdate:   {invoices.StatusDraft: invoices.StatusDraft},
		invoices.ActionIssue:    {invoices.StatusDraft: invoices.StatusIssued},
		invoices.ActionDelete:   {invoices.StatusDraft: ""},
		invoices.ActionVoid:     {invoices.StatusIssued: invoices.StatusVoid},
		invoices.ActionMarkPaid: {invoices.StatusIssued: invoices.StatusPaid},
	}
	for action, ok := range allowed {
		for _, from := range all {
			to, err := invoices.Transition(from, action)
			if want, legal := ok[from]; legal {
				require.NoError(t, err, "%s from %s", action, from)
				require.Equal(t, want, to)
				continue
			}
			pe, isProblem := problem.As(err)
			require.True(t, isProblem, "%s from %s must be refused", action, from)
			require.Equal(t, http.StatusConflict, pe.Status)
			require.Equal(t, invoices.CodeInvalidTransition, pe.Code)
			require.Equal(t, string(from), pe.Extra["current_status"])
			require.Contains(t, pe.Detail, string(from))
		}
	}
}

func TestComputeLinesCurrencies(t *testing.T) {
	t.Parallel()
	// The same lines price identically in any currency: amounts are minor
	// units whatever the exponent (JPY 0, EUR 2, BHD 3).
	lines, sub, tax, total, err := invoices.ComputeLines([]invoices.LineInput{
		{Description: "a", Quantity: 3 * quantity.One, UnitAmount: 1005, TaxRateBPS: 1950}, // 3015 × 19.5 % = 587.925 → 588
		{Description: "b", Quantity: 1 * quantity.One, UnitAmount: 25, TaxRateBPS: 1000},   // 2.5 → 2 (half-even)
		{Description: "c", Quantity: 1 * quantity.One, UnitAmount: 35, TaxRateBPS: 1000},   // 3.5 → 4 (half-even)
	})
	require.NoError(t, err)
	require.Equal(t, []int64{588, 2, 4}, []int64{lines[0].TaxAmount, lines[1].TaxAmount, lines[2].TaxAmount})
	require.Equal(t, int64(3015+25+35), sub)
	require.Equal(t, int64(594), tax)
	require.Equal(t, sub+tax, total)

	_, _, _, _, err = invoices.ComputeLines([]invoices.LineInput{{Description: "x", Quantity: 900_000_000_000 * quantity.One, UnitAmount: 9007199254740991}})
	require.True(t, problem.HasCode(err, "AMOUNT_OVERFLOW"))
	// Each line fits, the sum does not fit the JSON-safe range.
	_, _, _, _, err = invoices.ComputeLines([]invoices.LineInput{
		{Description: "x", Quantity: 1 * quantity.One, UnitAmount: 9007199254740991},
		{Description: "y", Quantity: 1 * quantity.One, UnitAmount: 1},
	})
	require.True(t, problem.HasCode(err, "AMOUNT_OVERFLOW"))
}

func TestFrozenColumnsRejectedBySQL(t *testing.T) {
	t.Parallel()
	ctx, db := context.Background(), storetest.Tx(t)
	inv := invoicetest.Issued(ctx, t, db, invoicetest.DraftOpts{})
	require.NotNil(t, inv.Number)

	// Each refused statement runs in a savepoint, so the test's
	// transaction goes on.
	refused := func(stmt string) error {
		sp, err := db.Begin(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, sp.Rollback(ctx)) }()
		_, err = sp.Exec(ctx, stmt, inv.ID)
		return err
	}
	for _, stmt := range []string{
		`UPDATE invoices SET total = total + 1, subtotal = subtotal + 1 WHERE id = $1`,
		`UPDATE invoices SET memo = 'changed' WHERE id = $1`,
		`UPDATE invoices SET number = 'INV-1999-000001' WHERE id = $1`,
		`UPDATE invoices SET status = 'draft', number = NULL, issued_at = NULL WHERE id = $1`,
		`UPDATE invoice_lines SET unit_amount = 1, amount = quantity_e4 / 10000 WHERE invoice_id = $1`,
		`DELETE FROM invoice_lines WHERE invoice_id = $1`,
		`INSERT INTO invoice_lines (invoice_id, position, description, quantity_e4, unit, unit_amount, vat_category, tax_rate_bps, amount, tax_amount) VALUES ($1, 99, 'x', 10000, 'C62', 1, 'Z', 0, 1, 0)`,
		`DELETE FROM invoices WHERE id = $1`,
	} {
		err := refused(stmt)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: want a trigger error, got %v", stmt, err)
		require.Equal(t, "55000", pgErr.Code, stmt)
	}
	// The lifecycle stays open, through settlement only: paid without a
	// payment behind it is refused, issued → paid by a payment of the
	// balance works, and then paid cannot become void.
	var pgErr *pgconn.PgError
	require.ErrorAs(t, refused(`UPDATE invoices SET status = 'paid', paid_at = now(), version = version + 1 WHERE id = $1`), &pgErr)
	require.Equal(t, "invoices_paid_when_settled", pgErr.ConstraintName)
	_, err := db.Exec(ctx, `INSERT INTO payments (id, invoice_id, amount, currency, received_on, method, recorded_at)
		SELECT gen_random_uuid(), id, total, currency, current_date, 'cash', now() FROM invoices WHERE id = $1`, inv.ID)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE invoices SET status = 'paid', paid_at = now(), amount_paid = total, version = version + 1 WHERE id = $1`, inv.ID)
	require.NoError(t, err)
	require.Error(t, refused(`UPDATE invoices SET status = 'void', voided_at = now(), paid_at = NULL WHERE id = $1`))

	got, err := invoices.InvoiceGetByID(ctx, db, inv.ID)
	require.NoError(t, err)
	require.Equal(t, inv.Total, got.Total)
	require.Equal(t, inv.Lines, got.Lines)

	// A draft stays editable by the same statements.
	d := invoicetest.Draft(ctx, t, db, invoicetest.DraftOpts{})
	_, err = db.Exec(ctx, `UPDATE invoices SET memo = 'changed' WHERE id = $1`, d.ID)
	require.NoError(t, err)
	// And a draft can be deleted with its lines.
	require.NoError(t, store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		return invoices.InvoiceDeleteTx(ctx, tx, d.ID)
	}))
	var lines int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM invoice_lines WHERE invoice_id = $1`, d.ID).Scan(&lines))
	require.Zero(t, lines)
	_, err = invoices.InvoiceGetByID(ctx, db, d.ID)
	require.True(t, problem.HasCode(err, problem.CodeNotFound))
}

var errForcedRollback = errors.New("forced rollback after taking a number")

// TestGaplessNumbering: 2,000 issue attempts from 32 goroutines, a tenth
// rolled back after taking their number; the committed numbers are exactly
// 1..N with no gap and no duplicate.
func TestGaplessNumbering(t *testing.T) {
	t.Parallel()
	const attempts, workers = 2000, 32
	// synchronous_commit off: 1,800 commits serialised on the series row
	// would otherwise wait for 1,800 WAL flushes; durability is not what
	// this test is about, and visibility and locking are unchanged.
	pool := storetest.PoolFor(t, storetest.URL(t), func(cfg *pgxpool.Config) {
		cfg.MaxConns = workers + 2
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	})
	ctx := context.Background()

	c := invoicetest.Customer(ctx, t, pool, invoicetest.CustomerOpts{})
	ids := make([]uuid.UUID, attempts)
	// Drafts in one statement: 2,000 round trips would dominate the test.
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO invoices (id, customer_id, currency, subtotal, tax_total, total, created_at, updated_at)
		SELECT id, $2, 'EUR', 100, 0, 100, now(), now() FROM unnest($1::uuid[]) AS id`, ids, c.ID)
	require.NoError(t, err)

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	jobs := make(chan int)
	var (
		mu         sync.Mutex
		committed  = map[uuid.UUID]string{}
		rolledBack int
		wg         sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				var number string
				err := store.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
					draft, err := invoices.InvoiceLockTx(ctx, tx, ids[i])
					if err != nil {
						return err
					}
					inv, err := invoices.InvoiceIssueTx(ctx, tx, draft, "INV", at, invoices.Date{Time: at.UTC().Truncate(24 * time.Hour)})
					if err != nil {
						return err
					}
					number = *inv.Number
					if i%10 == 0 {
						return errForcedRollback
					}
					return nil
				})
				mu.Lock()
				switch {
				case errors.Is(err, errForcedRollback):
					rolledBack++
				case err != nil:
					t.Errorf("issue %d: %v", i, err)
				default:
					committed[ids[i]] = number
				}
				mu.Unlock()
			}
		}()
	}
	for i := range attempts {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	require.Equal(t, attempts/10, rolledBack)
	n := attempts - rolledBack
	require.Len(t, committed, n)

	rows, err := pool.Query(ctx, `SELECT number FROM invoices WHERE status = 'issued' ORDER BY number`)
	require.NoError(t, err)
	numbers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, numbers, n)
	for i, num := range numbers {
		require.Equal(t, fmt.Sprintf("INV-2026-%06d", i+1), num)
	}
	// What each committer saw is what is stored.
	got := make([]string, 0, n)
	for _, num := range committed {
		got = append(got, num)
	}
	sort.Strings(got)
	require.Equal(t, numbers, got)
	var last int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT last_seq FROM invoice_number_series WHERE prefix = 'INV' AND year = 2026`).Scan(&last))
	require.Equal(t, int64(n), last)
	var drafts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE status = 'draft'`).Scan(&drafts))
	require.Equal(t, rolledBack, drafts)
}

func TestNumberSeriesPerPrefixAndYear(t *testing.T) {
	t.Parallel()
	ctx, db := context.Background(), storetest.Tx(t)
	issue := func(prefix string, at time.Time) string {
		d := invoicetest.Draft(ctx, t, db, invoicetest.DraftOpts{})
		var num string
		require.NoError(t, store.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
			inv, err := invoices.InvoiceIssueTx(ctx, tx, d, prefix, at, invoices.Date{Time: at.UTC().Truncate(24 * time.Hour)})
			if err == nil {
				num = *inv.Number
			}
			return err
		}))
		return num
	}
	y26 := time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)
	y27 := time.Date(2027, 1, 1, 0, 1, 0, 0, time.UTC)
	require.Equal(t, "INV-2026-000001", issue("INV", y26))
	require.Equal(t, "INV-2026-000002", issue("INV", y26))
	require.Equal(t, "INV-2027-000001", issue("INV", y27))
	require.Equal(t, "CRN-2026-000001", issue("CRN", y26))
}

func TestInvoiceJSONRoundTrips(t *testing.T) {
	t.Parallel()
	d, err := invoices.ParseDate("2027-01-31")
	require.NoError(t, err)
	in := invoices.Invoice{DueDate: &d, Currency: "EUR", Lines: []invoices.Line{{Description: "x", Quantity: 1 * quantity.One, UnitAmount: 5}}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	var out invoices.Invoice
	require.NoError(t, json.Unmarshal(b, &out), "a stored snapshot decodes back into an Invoice")
	require.Equal(t, "2027-01-31", out.DueDate.String())
	require.Error(t, json.Unmarshal([]byte(`{"due_date":"31.01.2027"}`), &out))
}
