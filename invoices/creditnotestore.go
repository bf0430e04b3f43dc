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

const creditNoteColumns = `c.id, c.number, c.invoice_id, i.number, i.issued_at, i.buyer_reference, c.currency, c.reason, c.subtotal, c.tax_total, c.total,
	c.bill_to, c.seller, c.invoice_version, c.approval_id, c.allowance_id, c.issued_by, c.issued_at, i.supply_date, i.period_start, i.period_end, i.purchase_order`

const creditNoteFrom = ` FROM credit_notes c JOIN invoices i ON i.id = c.invoice_id`

func scanCreditNote(row pgx.Row) (*CreditNote, error) {
	var (
		cn                    CreditNote
		supply, start, finish *time.Time
	)
	if err := row.Scan(&cn.ID, &cn.Number, &cn.InvoiceID, &cn.InvoiceNumber, &cn.InvoiceIssuedAt, &cn.InvoiceBuyerReference, &cn.Currency, &cn.Reason, &cn.Subtotal, &cn.TaxTotal, &cn.Total,
		&cn.BillTo, &cn.Seller, &cn.InvoiceVersion, &cn.ApprovalID, &cn.AllowanceID, &cn.IssuedBy, &cn.IssuedAt, &supply, &start, &finish, &cn.InvoicePurchaseOrder); err != nil {
		return nil, err
	}
	cn.InvoiceSupplyDate = dateOf(supply)
	if start != nil && finish != nil {
		cn.InvoicePeriod = &Period{Start: *dateOf(start), End: *dateOf(finish)}
	}
	cn.BillTo.Address = addressArg(cn.BillTo.Address)
	cn.IssuedAt = cn.IssuedAt.UTC()
	cn.Lines = []CreditLine{}
	return &cn, nil
}

// CreditNoteIssueTx credits the locked issued invoice inv with cn (its
// lines and totals priced by planCredit, its id, reason, issuer, approval
// and seller set; a nil seller records none): the invoice's
// amount_credited grows by cn's total (paid once nothing is owed), then
// ONE statement takes the next number of the (prefix, year of
// cn.IssuedAt) series and inserts the credit note with its lines. Call it
// as the last write before COMMIT: the series row lock serialises every
// issuer of credit notes until this transaction ends, and a rollback
// gives the number back, which keeps the series gapless. cn's Invoice is
// the invoice after.
func CreditNoteIssueTx(ctx context.Context, tx pgx.Tx, inv *Invoice, cn *CreditNote, prefix string) (*CreditNote, error) {
	at := cn.IssuedAt.UTC()
	after, err := invoiceSettleTx(ctx, tx, inv, 0, cn.Total, at)
	if err != nil {
		return nil, err
	}
	n := len(cn.Lines)
	invLine, plain := make([]*int32, n), make([]Line, n)
	for i, l := range cn.Lines {
		plain[i] = l.Line
		if l.InvoiceLine != nil {
			p := int32(*l.InvoiceLine)
			invLine[i] = &p
		}
	}
	c := lineColumnsOf(plain)
	billTo := BillTo{}
	if inv.BillTo != nil {
		billTo = *inv.BillTo
	}
	err = tx.QueryRow(ctx, `
		WITH seq AS (
			INSERT INTO credit_note_number_series AS s (prefix, year, last_seq) VALUES ($2, $3, 1)
			ON CONFLICT (prefix, year) DO UPDATE SET last_seq = s.last_seq + 1
			RETURNING last_seq
		), cn AS (
			INSERT INTO credit_notes (id, invoice_id, number, currency, reason, subtotal, tax_total, total, line_count,
				bill_to, invoice_version, issued_by, approval_id, issued_at, seller, allowance_id)
			SELECT $1, $5, $4 || lpad(seq.last_seq::text, greatest(6, length(seq.last_seq::text)), '0'), $6, $7, $8, $9, $10, $11,
				$12, $13, $14, $15, $16, (SELECT `+sellerFrozen+` FROM seller), $29
			FROM seq
			RETURNING id, number, seller
		), ln AS (
			INSERT INTO credit_note_lines (credit_note_id, position, invoice_line, description, quantity_e4, unit, unit_amount,
				vat_category, tax_rate_bps, exemption_reason, exemption_code, amount, tax_amount)
			SELECT cn.id, l.* FROM cn, unnest($17::int[], $18::int[], $19::text[], $20::bigint[], $25::text[], $21::bigint[],
				$26::text[], $22::int[], $27::text[], $28::text[], $23::bigint[], $24::bigint[]) AS l
		)
		SELECT number, seller FROM cn`,
		cn.ID, prefix, at.Year(), fmt.Sprintf("%s-%d-", prefix, at.Year()), inv.ID, inv.Currency, cn.Reason,
		cn.Subtotal, cn.TaxTotal, cn.Total, n, billTo, inv.Version, cn.IssuedBy, cn.ApprovalID, at,
		c.pos, invLine, c.desc, c.qty, c.price, c.rate, c.amount, c.tax,
		c.unit, c.category, c.reason, c.code, cn.AllowanceID).Scan(&cn.Number, &cn.Seller)
	if err != nil {
		return nil, mapError(err, "credit note")
	}
	cn.InvoiceID, cn.InvoiceNumber, cn.Currency, cn.BillTo, cn.InvoiceVersion, cn.IssuedAt = inv.ID, deref(inv.Number), inv.Currency, billTo, inv.Version, at
	cn.InvoiceBuyerReference, cn.InvoiceSupplyDate, cn.InvoicePeriod = inv.BuyerReference, inv.SupplyDate, inv.ServicePeriod
	cn.InvoicePurchaseOrder = inv.PurchaseOrder
	cn.Invoice = after
	return cn, nil
}

// creditedByLineTx sums what the credit notes of invoice id took of each
// of its lines, by position.
func creditedByLineTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (map[int]credited, error) {
	rows, err := tx.Query(ctx, `
		SELECT l.invoice_line, sum(l.quantity_e4)::bigint, sum(l.tax_amount)::bigint
		FROM credit_note_lines l JOIN credit_notes c ON c.id = l.credit_note_id
		WHERE c.invoice_id = $1 AND l.invoice_line IS NOT NULL
		GROUP BY l.invoice_line`, id)
	if err != nil {
		return nil, mapError(err, "credit notes")
	}
	defer rows.Close()
	out := map[int]credited{}
	for rows.Next() {
		var (
			pos int
			c   credited
		)
		if err := rows.Scan(&pos, &c.quantity, &c.tax); err != nil {
			return nil, mapError(err, "credit notes")
		}
		out[pos] = c
	}
	return out, mapError(rows.Err(), "credit notes")
}

// creditLinesLoad fills the lines of cns in one query.
func creditLinesLoad(ctx context.Context, db store.Executor, cns []*CreditNote) error {
	if len(cns) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(cns))
	byID := make(map[uuid.UUID]*CreditNote, len(cns))
	for i, cn := range cns {
		ids[i], byID[cn.ID] = cn.ID, cn
	}
	rows, err := db.Query(ctx, `
		SELECT credit_note_id, invoice_line, `+lineSelect+`
		FROM credit_note_lines WHERE credit_note_id = ANY($1) ORDER BY credit_note_id, position`, ids)
	if err != nil {
		return mapError(err, "credit note lines")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id uuid.UUID
			l  CreditLine
		)
		if err := rows.Scan(append([]any{&id, &l.InvoiceLine}, lineFields(&l.Line)...)...); err != nil {
			return mapError(err, "credit note lines")
		}
		byID[id].Lines = append(byID[id].Lines, l)
	}
	return mapError(rows.Err(), "credit note lines")
}

// CreditNoteGetByID returns one credit note with its lines, read in one
// snapshot.
func CreditNoteGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*CreditNote, error) {
	var cn *CreditNote
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if cn, err = scanCreditNote(db.QueryRow(ctx, `SELECT `+creditNoteColumns+creditNoteFrom+` WHERE c.id = $1`, id)); err != nil {
			return mapError(err, "credit note")
		}
		return creditLinesLoad(ctx, db, []*CreditNote{cn})
	})
	if err != nil {
		return nil, err
	}
	return cn, nil
}

// CreditNoteList returns up to p.Limit credit notes (with lines) of
// invoice id after p.After in (issued_at, id) order; all of them when
// p.Limit is 0.
func CreditNoteList(ctx context.Context, db store.Executor, invoiceID uuid.UUID, p page.Request) ([]*CreditNote, error) {
	q := `SELECT ` + creditNoteColumns + creditNoteFrom + ` WHERE c.invoice_id = $1`
	args := []any{invoiceID}
	if p.After != nil {
		q += ` AND (c.issued_at, c.id) > ($2, $3)`
		args = append(args, p.After.CreatedAt, p.After.ID)
	}
	q += ` ORDER BY c.issued_at, c.id`
	if p.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, p.Limit)
	}
	var out []*CreditNote
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		rows, err := db.Query(ctx, q, args...)
		if err != nil {
			return mapError(err, "credit notes")
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*CreditNote, error) { return scanCreditNote(r) }); err != nil {
			return mapError(err, "credit notes")
		}
		return creditLinesLoad(ctx, db, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
