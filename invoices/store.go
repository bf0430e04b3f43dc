package invoices

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// mapError is store.MapError plus the freeze trigger's SQLSTATE 55000,
// which is a 409: the row's status forbids the write.
func mapError(err error, what string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55000" {
		e := problem.Conflict(CodeInvalidTransition, pgErr.Message)
		e.Err = err
		return e
	}
	return store.MapError(err, what)
}

// ---- customers ----

const customerColumns = `id, name, email, currency, address, vat_id, tax_number, buyer_reference, language, payment_terms_days,
	einvoice_format, peppol_id, version, created_at, updated_at`

func scanCustomer(row pgx.Row) (*Customer, error) {
	var c Customer
	if err := row.Scan(&c.ID, &c.Name, &c.Email, &c.Currency, &c.Address, &c.VATID, &c.TaxNumber, &c.BuyerReference, &c.Language,
		&c.PaymentTermsDays, &c.EInvoiceFormat, &c.PeppolID, &c.Version, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return nil, err
	}
	if c.Address.Lines == nil {
		c.Address.Lines = []string{}
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return &c, nil
}

// CustomerCreate inserts c (ID, Name, Email, Currency and CreatedAt set by
// the caller) and returns the stored row.
func CustomerCreate(ctx context.Context, db store.Executor, c *Customer) (*Customer, error) {
	row := db.QueryRow(ctx, `
		INSERT INTO customers (id, name, email, currency, address, vat_id, tax_number, buyer_reference, language, payment_terms_days,
			created_at, updated_at, einvoice_format, peppol_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13)
		RETURNING `+customerColumns, c.ID, c.Name, c.Email, c.Currency, addressArg(c.Address), c.VATID, c.TaxNumber, c.BuyerReference,
		cmp.Or(c.Language, "en"), c.PaymentTermsDays, c.CreatedAt, cmp.Or(c.EInvoiceFormat, einvoice.None), c.PeppolID)
	out, err := scanCustomer(row)
	if err != nil {
		return nil, mapError(err, "customer")
	}
	return out, nil
}

// CustomerGetByID returns one customer.
func CustomerGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*Customer, error) {
	out, err := scanCustomer(db.QueryRow(ctx, `SELECT `+customerColumns+` FROM customers WHERE id = $1`, id))
	if err != nil {
		return nil, mapError(err, "customer")
	}
	return out, nil
}

// customerAndSellerGet returns customer id and the seller (nil while
// none is set) in one round trip: what a draft's readiness reads.
func customerAndSellerGet(ctx context.Context, db store.Executor, id uuid.UUID) (*Customer, *Seller, error) {
	return customerAndSeller(ctx, db, `SELECT `+customerColumns+`, (SELECT `+sellerFrozen+` FROM seller) FROM customers WHERE id = $1`, id)
}

// customerAndSellerShareTx is customerAndSellerGet with both rows locked
// FOR SHARE until tx ends: issuing judges readiness on them and then
// freezes them in InvoiceIssueTx, so neither may change in between (a
// seller or customer change waits for the issue, or the issue for it,
// and reads what it committed).
func customerAndSellerShareTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Customer, *Seller, error) {
	return customerAndSeller(ctx, tx, `SELECT `+customerColumns+`, (SELECT `+sellerFrozen+` FROM seller FOR SHARE)
		FROM customers WHERE id = $1 FOR SHARE`, id)
}

func customerAndSeller(ctx context.Context, db store.Executor, query string, id uuid.UUID) (*Customer, *Seller, error) {
	var (
		c Customer
		s *Seller
	)
	err := db.QueryRow(ctx, query, id).Scan(
		&c.ID, &c.Name, &c.Email, &c.Currency, &c.Address, &c.VATID, &c.TaxNumber, &c.BuyerReference, &c.Language,
		&c.PaymentTermsDays, &c.EInvoiceFormat, &c.PeppolID, &c.Version, &c.CreatedAt, &c.UpdatedAt, &s)
	if err != nil {
		return nil, nil, mapError(err, "customer")
	}
	c.CreatedAt, c.UpdatedAt, c.Address = c.CreatedAt.UTC(), c.UpdatedAt.UTC(), addressArg(c.Address)
	return &c, s, nil
}

// CustomerLockTx returns one customer locked FOR UPDATE in tx.
func CustomerLockTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Customer, error) {
	out, err := scanCustomer(tx.QueryRow(ctx, `SELECT `+customerColumns+` FROM customers WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, mapError(err, "customer")
	}
	return out, nil
}

// addressArg is a for its jsonb column, never with null lines.
func addressArg(a party.Address) party.Address {
	if a.Lines == nil {
		a.Lines = []string{}
	}
	return a
}

// CustomerUpdateTx writes c's fields, bumping version.
func CustomerUpdateTx(ctx context.Context, tx pgx.Tx, c *Customer, at time.Time) (*Customer, error) {
	out, err := scanCustomer(tx.QueryRow(ctx, `
		UPDATE customers SET name = $2, email = $3, currency = $4, address = $6, vat_id = $7, tax_number = $8,
			buyer_reference = $9, language = $10, payment_terms_days = $11, einvoice_format = $12, peppol_id = $13,
			version = version + 1, updated_at = $5
		WHERE id = $1
		RETURNING `+customerColumns, c.ID, c.Name, c.Email, c.Currency, at, addressArg(c.Address), c.VATID, c.TaxNumber,
		c.BuyerReference, c.Language, c.PaymentTermsDays, cmp.Or(c.EInvoiceFormat, einvoice.None), c.PeppolID))
	if err != nil {
		return nil, mapError(err, "customer")
	}
	return out, nil
}

// InvoiceDraftsTouchByCustomerTx bumps the version of every draft of
// customer id. The customer (its name and email) is part of the snapshot
// an approver decides on, and approvals bind to the invoice's version: a
// customer edit must make the approvals of its drafts stale, or a draft
// could be issued to a bill-to the approver never saw. Issued invoices are
// left alone (their version tracks their own lifecycle).
func InvoiceDraftsTouchByCustomerTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, at time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE invoices SET version = version + 1, updated_at = $2 WHERE customer_id = $1 AND status = 'draft'`, id, at)
	return mapError(err, "invoices")
}

// CustomerList returns up to p.Limit customers after p.After in
// (created_at, id) order.
func CustomerList(ctx context.Context, db store.Executor, p page.Request) ([]*Customer, error) {
	q := `SELECT ` + customerColumns + ` FROM customers`
	args := []any{}
	if p.After != nil {
		q += ` WHERE (created_at, id) > ($1, $2)`
		args = append(args, p.After.CreatedAt, p.After.ID)
	}
	q += fmt.Sprintf(` ORDER BY created_at, id LIMIT %d`, p.Limit)
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, mapError(err, "customers")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Customer, error) { return scanCustomer(r) })
	if err != nil {
		return nil, mapError(err, "customers")
	}
	return out, nil
}

// ---- invoices ----

const invoiceColumns = `id, number, status, customer_id, currency, due_date, memo, subtotal, tax_total, total,
	amount_paid, amount_credited, issued_at, voided_at, paid_at, version, created_at, updated_at, bill_to, seller, tax_rounding,
	supply_date, period_start, period_end, payment_terms_days, purchase_order, buyer_reference`

func scanInvoice(row pgx.Row) (*Invoice, error) {
	var (
		inv                        Invoice
		due, supply, start, finish *time.Time
	)
	if err := row.Scan(&inv.ID, &inv.Number, &inv.Status, &inv.CustomerID, &inv.Currency, &due, &inv.Memo,
		&inv.Subtotal, &inv.TaxTotal, &inv.Total, &inv.AmountPaid, &inv.AmountCredited, &inv.IssuedAt, &inv.VoidedAt, &inv.PaidAt,
		&inv.Version, &inv.CreatedAt, &inv.UpdatedAt, &inv.BillTo, &inv.Seller, &inv.TaxRounding,
		&supply, &start, &finish, &inv.PaymentTermsDays, &inv.PurchaseOrder, &inv.BuyerReference); err != nil {
		return nil, err
	}
	inv.DueDate, inv.SupplyDate = dateOf(due), dateOf(supply)
	if start != nil && finish != nil {
		inv.ServicePeriod = &Period{Start: *dateOf(start), End: *dateOf(finish)}
	}
	if inv.BillTo != nil {
		inv.BillTo.Address = addressArg(inv.BillTo.Address)
	}
	for _, t := range []**time.Time{&inv.IssuedAt, &inv.VoidedAt, &inv.PaidAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	inv.CreatedAt, inv.UpdatedAt = inv.CreatedAt.UTC(), inv.UpdatedAt.UTC()
	inv.Lines, inv.VATBreakdown = []Line{}, []VATGroup{}
	inv.settle()
	return &inv, nil
}

// dateOf is a date column's value as a Date, nil for NULL.
func dateOf(t *time.Time) *Date {
	if t == nil {
		return nil
	}
	return &Date{time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)}
}

// periodArgs are p's start and end for their columns.
func periodArgs(p *Period) (start, end any) {
	if p == nil {
		return nil, nil
	}
	return p.Start.Time, p.End.Time
}

func dueArg(d *Date) any {
	if d == nil {
		return nil
	}
	return d.Time
}

// linesInsert writes lines as positions 0..n-1 in one statement (unnest
// keeps 1,000 lines at one round trip).
func linesInsert(ctx context.Context, db store.Executor, invoiceID uuid.UUID, lines []Line) error {
	if len(lines) == 0 {
		return nil
	}
	c := lineColumnsOf(lines)
	_, err := db.Exec(ctx, `
		INSERT INTO invoice_lines (invoice_id, position, description, quantity_e4, unit, unit_amount, vat_category, tax_rate_bps,
			exemption_reason, exemption_code, amount, tax_amount)
		SELECT $1, * FROM unnest($2::int[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::text[], $8::int[],
			$9::text[], $10::text[], $11::bigint[], $12::bigint[])`,
		invoiceID, c.pos, c.desc, c.qty, c.unit, c.price, c.category, c.rate, c.reason, c.code, c.amount, c.tax)
	return mapError(err, "invoice lines")
}

// lineColumns are lines as the columns of one multi-row INSERT (unnest).
type lineColumns struct {
	pos                                []int32
	desc, unit, category, reason, code []string
	qty, price, rate, amount, tax      []int64
}

func lineColumnsOf(lines []Line) lineColumns {
	n := len(lines)
	c := lineColumns{pos: make([]int32, n), desc: make([]string, n), unit: make([]string, n), category: make([]string, n),
		reason: make([]string, n), code: make([]string, n), qty: make([]int64, n), price: make([]int64, n),
		rate: make([]int64, n), amount: make([]int64, n), tax: make([]int64, n)}
	for i, l := range lines {
		c.pos[i], c.desc[i], c.qty[i], c.unit[i], c.price[i] = int32(i), l.Description, int64(l.Quantity), l.Unit, l.UnitAmount
		c.category[i], c.rate[i], c.reason[i], c.code[i] = string(l.VATCategory), l.TaxRateBPS, l.ExemptionReason, l.ExemptionCode
		c.amount[i], c.tax[i] = l.Amount, l.TaxAmount
	}
	return c
}

// lineSelect reads a line's columns in Line's order (scanLine).
const lineSelect = `description, quantity_e4, unit, unit_amount, vat_category, tax_rate_bps, exemption_reason, exemption_code, amount, tax_amount`

// lineFields are the destinations of lineSelect's columns in l.
func lineFields(l *Line) []any {
	return []any{&l.Description, &l.Quantity, &l.Unit, &l.UnitAmount, &l.VATCategory, &l.TaxRateBPS,
		&l.ExemptionReason, &l.ExemptionCode, &l.Amount, &l.TaxAmount}
}

// sellerFrozen is the seller row as a document freezes it (Seller, whose
// JSON is seller.Details'), read by the issuing statement itself.
const sellerFrozen = `jsonb_build_object('legal_name', legal_name, 'trading_name', trading_name, 'address', address,
	'vat_id', vat_id, 'tax_number', tax_number, 'registration', registration, 'contact', contact,
	'bank_accounts', bank_accounts, 'payment_terms_days', payment_terms_days)`

// termArgs are inv's supply and terms for their columns, in the order
// supply_date, period_start, period_end, payment_terms_days,
// purchase_order, buyer_reference.
func termArgs(inv *Invoice) []any {
	start, end := periodArgs(inv.ServicePeriod)
	return []any{dueArg(inv.SupplyDate), start, end, inv.PaymentTermsDays, inv.PurchaseOrder, inv.BuyerReference}
}

// InvoiceCreate inserts a draft with its lines; run it in a transaction so
// the lines and the invoice commit together.
func InvoiceCreate(ctx context.Context, db store.Executor, inv *Invoice) (*Invoice, error) {
	out, err := scanInvoice(db.QueryRow(ctx, `
		INSERT INTO invoices (id, status, customer_id, currency, due_date, memo, subtotal, tax_total, total, created_at, updated_at,
			supply_date, period_start, period_end, payment_terms_days, purchase_order, buyer_reference)
		VALUES ($1, 'draft', $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14, $15)
		RETURNING `+invoiceColumns,
		append([]any{inv.ID, inv.CustomerID, inv.Currency, dueArg(inv.DueDate), inv.Memo, inv.Subtotal, inv.TaxTotal, inv.Total, inv.CreatedAt},
			termArgs(inv)...)...))
	if err != nil {
		return nil, mapError(err, "invoice")
	}
	if err := linesInsert(ctx, db, out.ID, inv.Lines); err != nil {
		return nil, err
	}
	out.Lines, out.VATBreakdown = inv.Lines, Breakdown(inv.Lines)
	return out, nil
}

// InvoiceGetByID returns one invoice with its lines, both read in one
// snapshot.
func InvoiceGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*Invoice, error) {
	var inv *Invoice
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if inv, err = scanInvoice(db.QueryRow(ctx, `SELECT `+invoiceColumns+` FROM invoices WHERE id = $1`, id)); err != nil {
			return mapError(err, "invoice")
		}
		return linesLoad(ctx, db, []*Invoice{inv})
	})
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// InvoiceLockTx returns one invoice with its lines, its row locked FOR
// UPDATE in tx: every mutation starts here, so state checks and the effect
// see the same row.
func InvoiceLockTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Invoice, error) {
	inv, err := scanInvoice(tx.QueryRow(ctx, `SELECT `+invoiceColumns+` FROM invoices WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, mapError(err, "invoice")
	}
	if err := linesLoad(ctx, tx, []*Invoice{inv}); err != nil {
		return nil, err
	}
	return inv, nil
}

func scanLine(row pgx.Row) (uuid.UUID, Line, error) {
	var (
		id uuid.UUID
		l  Line
	)
	err := row.Scan(append([]any{&id}, lineFields(&l)...)...)
	return id, l, err
}

// linesLoad fills the lines of invs in one query.
func linesLoad(ctx context.Context, db store.Executor, invs []*Invoice) error {
	if len(invs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(invs))
	byID := make(map[uuid.UUID]*Invoice, len(invs))
	for i, inv := range invs {
		ids[i] = inv.ID
		byID[inv.ID] = inv
	}
	rows, err := db.Query(ctx, `
		SELECT invoice_id, `+lineSelect+`
		FROM invoice_lines WHERE invoice_id = ANY($1) ORDER BY invoice_id, position`, ids)
	if err != nil {
		return mapError(err, "invoice lines")
	}
	defer rows.Close()
	for rows.Next() {
		id, l, err := scanLine(rows)
		if err != nil {
			return mapError(err, "invoice lines")
		}
		byID[id].Lines = append(byID[id].Lines, l)
	}
	for _, inv := range invs {
		inv.VATBreakdown = Breakdown(inv.Lines)
	}
	return mapError(rows.Err(), "invoice lines")
}

// InvoiceUpdateDraftTx rewrites a draft's content and replaces its lines,
// bumping version. The caller holds the row lock and checked the status.
func InvoiceUpdateDraftTx(ctx context.Context, tx pgx.Tx, inv *Invoice, at time.Time) (*Invoice, error) {
	out, err := scanInvoice(tx.QueryRow(ctx, `
		UPDATE invoices SET customer_id = $2, currency = $3, due_date = $4, memo = $5,
			subtotal = $6, tax_total = $7, total = $8, tax_rounding = $10, version = version + 1, updated_at = $9,
			supply_date = $11, period_start = $12, period_end = $13, payment_terms_days = $14, purchase_order = $15, buyer_reference = $16
		WHERE id = $1 AND status = 'draft'
		RETURNING `+invoiceColumns,
		append([]any{inv.ID, inv.CustomerID, inv.Currency, dueArg(inv.DueDate), inv.Memo, inv.Subtotal, inv.TaxTotal, inv.Total, at, inv.TaxRounding},
			termArgs(inv)...)...))
	if err != nil {
		return nil, mapError(err, "invoice")
	}
	if _, err := tx.Exec(ctx, `DELETE FROM invoice_lines WHERE invoice_id = $1`, inv.ID); err != nil {
		return nil, mapError(err, "invoice lines")
	}
	if err := linesInsert(ctx, tx, inv.ID, inv.Lines); err != nil {
		return nil, err
	}
	out.Lines, out.VATBreakdown = inv.Lines, Breakdown(inv.Lines)
	return out, nil
}

// InvoiceVoidTx voids the issued invoice inv, locked by the caller with
// its lines (InvoiceLockTx), at at, bumping version; the trigger refuses
// any other change of a frozen row, and the CHECKs a void invoice with
// anything paid or credited, so its lines are the ones loaded.
func InvoiceVoidTx(ctx context.Context, tx pgx.Tx, inv *Invoice, at time.Time) (*Invoice, error) {
	out, err := scanInvoice(tx.QueryRow(ctx, `
		UPDATE invoices SET status = 'void', voided_at = $2, version = version + 1, updated_at = $2
		WHERE id = $1
		RETURNING `+invoiceColumns, inv.ID, at))
	if err != nil {
		return nil, mapError(err, "invoice")
	}
	out.Lines, out.VATBreakdown = inv.Lines, Breakdown(inv.Lines)
	return out, nil
}

// InvoiceIssueTx takes the next number of the (prefix, year of at) series
// and issues the draft inv with it, in ONE statement: the counter row is
// created or bumped and the invoice updated together, freezing whom it
// bills, the buyer's reference and the seller (none while none is set)
// as they are now, and, without a due date, giving it from issueDate by
// the payment terms (the draft's, the customer's or the seller's). inv is locked by the
// caller with its lines (InvoiceLockTx), so its lines are the issued
// invoice's. Call it as the last write before COMMIT: the counter row lock
// serialises every issuer of the series until this transaction ends, and
// a rollback gives the number back, which is what keeps numbers gapless.
func InvoiceIssueTx(ctx context.Context, tx pgx.Tx, inv *Invoice, prefix string, at time.Time, issueDate Date) (*Invoice, error) {
	at = at.UTC()
	out, err := scanInvoice(tx.QueryRow(ctx, `
		WITH seq AS (
			INSERT INTO invoice_number_series AS s (prefix, year, last_seq) VALUES ($2, $3, 1)
			ON CONFLICT (prefix, year) DO UPDATE SET last_seq = s.last_seq + 1
			RETURNING last_seq
		)
		UPDATE invoices SET status = 'issued',
			number = $5 || lpad(seq.last_seq::text, greatest(6, length(seq.last_seq::text)), '0'),
			issued_at = $4, version = invoices.version + 1, updated_at = $4,
			bill_to = jsonb_build_object('name', c.name, 'email', c.email, 'address', c.address, 'vat_id', c.vat_id,
				'tax_number', c.tax_number, 'language', c.language, 'einvoice_format', c.einvoice_format, 'peppol_id', c.peppol_id),
			seller = (SELECT `+sellerFrozen+` FROM seller),
			-- The reference the invoice quotes is fixed with it: the
			-- draft's own, else the customer's as it is now.
			buyer_reference = CASE WHEN invoices.buyer_reference = '' THEN c.buyer_reference ELSE invoices.buyer_reference END,
			-- Without a due date, the terms (the draft's, else the
			-- customer's, else the seller's) give it from the issue date.
			payment_terms_days = CASE WHEN invoices.due_date IS NULL
				THEN coalesce(invoices.payment_terms_days, c.payment_terms_days, (SELECT payment_terms_days FROM seller))
				ELSE invoices.payment_terms_days END,
			due_date = coalesce(invoices.due_date,
				$6::date + coalesce(invoices.payment_terms_days, c.payment_terms_days, (SELECT payment_terms_days FROM seller)))
		FROM seq, customers c
		WHERE invoices.id = $1 AND invoices.status = 'draft' AND c.id = invoices.customer_id
		RETURNING `+prefixed(invoiceColumns, "invoices."), inv.ID, prefix, at.Year(), at, fmt.Sprintf("%s-%d-", prefix, at.Year()),
		issueDate.Time))
	if err != nil {
		return nil, mapError(err, "invoice")
	}
	out.Lines, out.VATBreakdown = inv.Lines, Breakdown(inv.Lines)
	return out, nil
}

func prefixed(cols, p string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// InvoiceDeleteTx deletes a draft and its lines.
func InvoiceDeleteTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	tag, err := tx.Exec(ctx, `DELETE FROM invoices WHERE id = $1 AND status = 'draft'`, id)
	if err != nil {
		return mapError(err, "invoice")
	}
	if tag.RowsAffected() != 1 {
		return problem.NotFound("invoice")
	}
	return nil
}

// InvoiceFilter narrows InvoiceList; zero fields do not filter.
type InvoiceFilter struct {
	Status        Status
	CustomerID    *uuid.UUID
	Number        string
	CreatedAfter  *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	// Overdue keeps only the overdue invoices (true) or the others
	// (false) as of Today, a date in the business time zone.
	Overdue *bool
	Today   Date
	// NewestFirst lists in descending (created_at, id) order, as the
	// back office's invoice page reads; the API lists oldest first.
	NewestFirst bool
}

// overdueSQL is Invoice.dated's rule in SQL, for one argument: today. The
// list pages through invoices_status_idx ('issued', created_at, id), so a
// page costs the same at any table size.
const overdueSQL = `(status = 'issued' AND coalesce(due_date < ?::date, false) AND amount_paid + amount_credited < total)`

// InvoiceList returns up to p.Limit invoices (with lines) matching f after
// p.After in (created_at, id) order, or before it in the reverse order
// when f.NewestFirst.
func InvoiceList(ctx context.Context, db store.Executor, f InvoiceFilter, p page.Request) ([]*Invoice, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	if f.CustomerID != nil {
		add("customer_id = ?", *f.CustomerID)
	}
	if f.Number != "" {
		add("number = ?", f.Number)
	}
	if f.CreatedAfter != nil {
		add("created_at >= ?", *f.CreatedAfter)
	}
	if f.CreatedBefore != nil {
		add("created_at < ?", *f.CreatedBefore)
	}
	switch {
	case f.Overdue == nil:
	case *f.Overdue:
		add(overdueSQL, f.Today.Time)
	default:
		add("NOT "+overdueSQL, f.Today.Time)
	}
	after, order := ">", "created_at, id"
	if f.NewestFirst {
		after, order = "<", "created_at DESC, id DESC"
	}
	if p.After != nil {
		args = append(args, p.After.CreatedAt, p.After.ID)
		where = append(where, fmt.Sprintf("(created_at, id) %s ($%d, $%d)", after, len(args)-1, len(args)))
	}
	q := `SELECT ` + invoiceColumns + ` FROM invoices`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += fmt.Sprintf(` ORDER BY %s LIMIT %d`, order, p.Limit)
	var out []*Invoice
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		rows, err := db.Query(ctx, q, args...)
		if err != nil {
			return mapError(err, "invoices")
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Invoice, error) { return scanInvoice(r) }); err != nil {
			return mapError(err, "invoices")
		}
		return linesLoad(ctx, db, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
