package invoices

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

const paymentColumns = `id, invoice_id, amount, currency, received_on, method, reference,
	recorded_by, recorded_at, reversed_at, reversed_by, reversal_reason, version`

func scanPayment(row pgx.Row) (*Payment, error) {
	var (
		p  Payment
		on time.Time
	)
	if err := row.Scan(&p.ID, &p.InvoiceID, &p.Amount, &p.Currency, &on, &p.Method, &p.Reference,
		&p.RecordedBy, &p.RecordedAt, &p.ReversedAt, &p.ReversedBy, &p.ReversalReason, &p.Version); err != nil {
		return nil, err
	}
	p.ReceivedOn = Date{time.Date(on.Year(), on.Month(), on.Day(), 0, 0, 0, 0, time.UTC)}
	p.RecordedAt = p.RecordedAt.UTC()
	p.Status = PaymentReceived
	if p.ReversedAt != nil {
		u := p.ReversedAt.UTC()
		p.ReversedAt, p.Status = &u, PaymentReversed
	}
	return &p, nil
}

// paymentInsertTx records p against its invoice, in the invoice's
// currency (read by the insert, so the two cannot differ). The caller
// holds the invoice's row lock and moves its balance (invoiceSettleTx).
func paymentInsertTx(ctx context.Context, tx pgx.Tx, p *Payment) (*Payment, error) {
	out, err := scanPayment(tx.QueryRow(ctx, `
		INSERT INTO payments (id, invoice_id, amount, currency, received_on, method, reference, recorded_by, recorded_at)
		SELECT $1, i.id, $3, i.currency, $4, $5, $6, $7, $8 FROM invoices i WHERE i.id = $2
		RETURNING `+paymentColumns,
		p.ID, p.InvoiceID, p.Amount, p.ReceivedOn.Time, p.Method, p.Reference, p.RecordedBy, p.RecordedAt))
	if err != nil {
		return nil, mapError(err, "payment")
	}
	return out, nil
}

// paymentGet returns one payment.
func paymentGet(ctx context.Context, db store.Executor, id uuid.UUID) (*Payment, error) {
	out, err := scanPayment(db.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE id = $1`, id))
	if err != nil {
		return nil, mapError(err, "payment")
	}
	return out, nil
}

// paymentLockTx returns one payment locked FOR UPDATE in tx; take its
// invoice's lock first, as recording a payment does.
func paymentLockTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Payment, error) {
	out, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, mapError(err, "payment")
	}
	return out, nil
}

// paymentReverseTx marks the locked payment p reversed by by at at.
func paymentReverseTx(ctx context.Context, tx pgx.Tx, p *Payment, by uuid.UUID, reason string, at time.Time) (*Payment, error) {
	out, err := scanPayment(tx.QueryRow(ctx, `
		UPDATE payments SET reversed_at = $2, reversed_by = $3, reversal_reason = $4, version = version + 1
		WHERE id = $1 AND reversed_at IS NULL
		RETURNING `+paymentColumns, p.ID, at, by, reason))
	if err != nil {
		return nil, mapError(err, "payment")
	}
	return out, nil
}

// PaymentList returns up to p.Limit payments of invoice id after p.After
// in (recorded_at, id) order; PaymentsOf all of them (a document lists
// every one).
func PaymentList(ctx context.Context, db store.Executor, invoiceID uuid.UUID, p page.Request) ([]*Payment, error) {
	q := `SELECT ` + paymentColumns + ` FROM payments WHERE invoice_id = $1`
	args := []any{invoiceID}
	if p.After != nil {
		q += ` AND (recorded_at, id) > ($2, $3)`
		args = append(args, p.After.CreatedAt, p.After.ID)
	}
	if p.Limit > 0 {
		q += fmt.Sprintf(` ORDER BY recorded_at, id LIMIT %d`, p.Limit)
	} else {
		q += ` ORDER BY recorded_at, id`
	}
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, mapError(err, "payments")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Payment, error) { return scanPayment(r) })
	if err != nil {
		return nil, mapError(err, "payments")
	}
	return out, nil
}

// PaymentsOf returns every payment of invoice id, oldest first.
func PaymentsOf(ctx context.Context, db store.Executor, invoiceID uuid.UUID) ([]*Payment, error) {
	return PaymentList(ctx, db, invoiceID, page.Request{})
}

// invoiceSettleTx moves the locked issued or paid invoice inv's amounts by
// paid and credited (minor units, a reversal negative), bumping version:
// paid when nothing is left owing (since at, or since it was paid),
// issued otherwise. The caller has checked the amounts against the
// balance; the table's CHECKs and the commit-time settlement check are the
// backstop.
func invoiceSettleTx(ctx context.Context, tx pgx.Tx, inv *Invoice, paid, credited int64, at time.Time) (*Invoice, error) {
	paid, credited = inv.AmountPaid+paid, inv.AmountCredited+credited
	status, paidAt := StatusIssued, (*time.Time)(nil)
	if paid+credited == inv.Total {
		status, paidAt = StatusPaid, inv.PaidAt
		if paidAt == nil {
			paidAt = &at
		}
	}
	out, err := scanInvoice(tx.QueryRow(ctx, `
		UPDATE invoices SET amount_paid = $2, amount_credited = $3, status = $4, paid_at = $5,
			version = version + 1, updated_at = $6
		WHERE id = $1
		RETURNING `+invoiceColumns, inv.ID, paid, credited, status, paidAt, at))
	if err != nil {
		return nil, mapError(err, "invoice")
	}
	out.Lines = inv.Lines
	return out, nil
}

// invoiceExists is nil when invoice id exists, 404 otherwise: a list of
// what an invoice holds is empty only for an invoice that is there.
func invoiceExists(ctx context.Context, db store.Executor, id uuid.UUID) error {
	var ok bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM invoices WHERE id = $1)`, id).Scan(&ok); err != nil {
		return mapError(err, "invoice")
	}
	if !ok {
		return mapError(pgx.ErrNoRows, "invoice")
	}
	return nil
}
