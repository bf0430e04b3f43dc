package invoices_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/invoiced/invoiced/vat"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// 32 clerks credit one invoice at once, each 40.00 of its 120.00, each
// asking, getting approved and trying again until it is issued or
// refused: every approval binds the invoice's version, so each credit
// stales the others, which ask anew. Exactly three fit; the total
// credited never exceeds the invoice's total.
func TestConcurrentCreditNotesNeverExceedTheTotal(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	id := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID}).ID.String()
	const n, amount, total = 32, 4000, 12000
	var (
		wg            sync.WaitGroup
		start         = make(chan struct{})
		ok, refused   atomic.Int64
		path          = "/v1/invoices/" + id + "/credit-notes"
		maxAttempts   = 200
		approvalFails atomic.Int64
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := map[string]any{"reason": fmt.Sprintf("part %d", i), "amount": amount}
			for range maxAttempts {
				r := b.h.Do(t, http.MethodPost, path, b.clerk, body)
				p := map[string]any{}
				if r.StatusCode >= 400 {
					p = r.Problem(t)
				}
				switch {
				case r.StatusCode == http.StatusCreated:
					ok.Add(1)
					return
				case p["code"] == approvals.CodeApprovalRequired:
					a := b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil)
					if a.StatusCode != http.StatusOK {
						approvalFails.Add(1) // superseded meanwhile: ask again
					}
				case p["code"] == approvals.CodeApprovalStale:
				case r.StatusCode == http.StatusUnprocessableEntity, p["code"] == invoices.CodeInvalidTransition:
					refused.Add(1) // over the balance, or nothing left (paid)
					return
				default:
					t.Errorf("unexpected %d: %s", r.StatusCode, r.Body)
					return
				}
			}
			t.Errorf("credit %d neither issued nor refused in %d attempts", i, maxAttempts)
		}()
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, total/amount, ok.Load())
	require.EqualValues(t, n-total/amount, refused.Load())
	got, err := invoices.InvoiceGetByID(b.ctx, b.h.Pool, uuid.MustParse(id))
	require.NoError(t, err)
	require.EqualValues(t, total, got.AmountCredited)
	require.Equal(t, invoices.StatusPaid, got.Status)
	var sum, numbers int64
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT coalesce(sum(total), 0), count(DISTINCT number) FROM credit_notes WHERE invoice_id = $1`, id).Scan(&sum, &numbers))
	require.EqualValues(t, total, sum)
	require.EqualValues(t, total/amount, numbers)
}

// issuedInBulk inserts n issued invoices of 1.00 in one statement: 2,000
// round trips would dominate the test.
func issuedInBulk(ctx context.Context, t *testing.T, pool *pgxpool.Pool, n int) []uuid.UUID {
	t.Helper()
	c := invoicetest.Customer(ctx, t, pool, invoicetest.CustomerOpts{})
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO invoices (id, customer_id, status, number, currency, subtotal, tax_total, total, issued_at, bill_to, created_at, updated_at)
		SELECT id, $2, 'issued', 'INV-T-' || n, 'EUR', 100, 0, 100, now(), '{"name": "Acme GmbH", "email": ""}', now(), now()
		FROM unnest($1::uuid[]) WITH ORDINALITY AS x(id, n)`, ids, c.ID)
	require.NoError(t, err)
	return ids
}

var errCreditRollback = errors.New("forced rollback after taking a credit note number")

// TestGaplessCreditNoteNumbers: 2,000 credit notes from 32 goroutines, a
// tenth rolled back after taking their number; the committed numbers are
// exactly CN-2026-000001 … with no gap and no duplicate, and only the
// committed credits moved their invoices.
func TestGaplessCreditNoteNumbers(t *testing.T) {
	t.Parallel()
	const attempts, workers = 2000, 32
	// synchronous_commit off, as TestGaplessNumbering: visibility and
	// locking are what this is about, not durability.
	pool := storetest.PoolFor(t, storetest.URL(t), func(cfg *pgxpool.Config) {
		cfg.MaxConns = workers + 2
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	})
	ctx := context.Background()

	u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: "clara", DisplayName: "Clara", Role: identity.RoleClerk})
	require.NoError(t, err)
	ids := issuedInBulk(ctx, t, pool, attempts)

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
					inv, err := invoices.InvoiceLockTx(ctx, tx, ids[i])
					if err != nil {
						return err
					}
					cn, err := invoices.CreditNoteIssueTx(ctx, tx, inv, &invoices.CreditNote{
						ID: uuid.Must(uuid.NewV7()), Reason: "returned", Subtotal: 100, Total: 100,
						Lines:      []invoices.CreditLine{{Line: invoices.Line{Description: "Returned", Quantity: 1 * quantity.One, Unit: invoices.DefaultUnit, UnitAmount: 100, VATCategory: vat.ZeroRated, Amount: 100}}},
						ApprovalID: new(uuid.New()), IssuedBy: u.ID, IssuedAt: at,
					}, "CN")
					if err != nil {
						return err
					}
					number = cn.Number
					if i%10 == 0 {
						return errCreditRollback
					}
					return nil
				})
				mu.Lock()
				switch {
				case errors.Is(err, errCreditRollback):
					rolledBack++
				case err != nil:
					t.Errorf("credit %d: %v", i, err)
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
	rows, err := pool.Query(ctx, `SELECT number FROM credit_notes ORDER BY number`)
	require.NoError(t, err)
	numbers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, numbers, n)
	for i, num := range numbers {
		require.Equal(t, fmt.Sprintf("CN-2026-%06d", i+1), num)
	}
	var last int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT last_seq FROM credit_note_number_series WHERE prefix = 'CN' AND year = 2026`).Scan(&last))
	require.Equal(t, int64(n), last)
	var credited, open int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'paid' AND amount_credited = 100),
		count(*) FILTER (WHERE status = 'issued' AND amount_credited = 0) FROM invoices`).Scan(&credited, &open))
	require.Equal(t, n, credited)
	require.Equal(t, rolledBack, open)
}
