package invoices_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// A GET never shows lines that do not add up to the totals beside them,
// however a concurrent edit of the draft interleaves with it: the row and
// its lines are two statements, read in one snapshot. (Before, a torn read
// showed up within half a second of this.)
func TestGetInvoiceLinesAlwaysAddUpToItsTotals(t *testing.T) {
	t.Parallel()
	b := setupHTTP(t)
	d := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	sets := [][]invoices.LineInput{
		{{Description: "a", Quantity: 1 * quantity.One, UnitAmount: 100}},
		{{Description: "b", Quantity: 3 * quantity.One, UnitAmount: 7000}, {Description: "c", Quantity: 1 * quantity.One, UnitAmount: 1}},
	}
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			_ = store.WithTx(ctx, b.h.Pool, func(ctx context.Context, tx pgx.Tx) error {
				inv, err := invoices.InvoiceLockTx(ctx, tx, d.ID)
				if err != nil {
					return err
				}
				if inv.Lines, inv.Subtotal, inv.TaxTotal, inv.Total, err = invoices.ComputeLines(sets[i%2]); err != nil {
					return err
				}
				_, err = invoices.InvoiceUpdateDraftTx(ctx, tx, inv, time.Now().UTC())
				return err
			})
		}
	}()
	torn := 0
	var example string
	for ctx.Err() == nil && torn == 0 {
		r := b.h.Do(t, http.MethodGet, "/v1/invoices/"+d.ID.String(), b.clerk, nil)
		if r.StatusCode != http.StatusOK {
			continue
		}
		var inv invoices.Invoice
		r.JSON(t, &inv)
		var sum int64
		for _, l := range inv.Lines {
			sum += l.Amount
		}
		if sum != inv.Subtotal {
			torn++
			example = string(r.Body)
		}
	}
	cancel()
	wg.Wait()
	require.Zero(t, torn, "a GET returned lines that do not add up to the subtotal: %s", example)
}
