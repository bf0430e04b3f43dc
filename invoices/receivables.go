package invoices

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Aging is what is owed in one currency, by how long it is past due: the
// open (issued, owing) invoices' balances in days past their due date in
// the business time zone. Current is not yet due (or has no due date);
// an invoice due today is current, due yesterday 1 day past due.
type Aging struct {
	Currency   string `json:"currency"`
	Invoices   int64  `json:"invoices"`
	Current    int64  `json:"current"`
	Days1To30  int64  `json:"days_1_30"`
	Days31To60 int64  `json:"days_31_60"`
	Days61To90 int64  `json:"days_61_90"`
	Over90     int64  `json:"days_over_90"`
	Total      int64  `json:"total"`
}

// CustomerAging is one customer's Aging, one per currency it owes in.
type CustomerAging struct {
	CustomerID uuid.UUID `json:"customer_id"`
	Name       string    `json:"name"`
	Balances   []Aging   `json:"balances"`
	createdAt  time.Time
}

// Cursor is the customer's position in the report (the customers' order).
func (c *CustomerAging) Cursor() page.Cursor {
	return page.Cursor{CreatedAt: c.createdAt, ID: c.CustomerID}
}

// Receivables is the receivables report as of a date.
type Receivables struct {
	AsOf       Date    `json:"as_of"`
	TimeZone   string  `json:"time_zone"`
	Currencies []Aging `json:"currencies"`
	// Customers, with ?by=customer: a page of the customers that owe,
	// in the customers' list order.
	Customers *page.List[*CustomerAging] `json:"customers,omitempty"`
}

// agingSQL sums open balances by days past due ($1: today, a date). The
// inner scan is over invoices_open_idx alone (an index-only scan).
const agingSQL = `count(*) AS n,
	coalesce(sum(b) FILTER (WHERE d IS NULL OR d <= 0), 0)::bigint AS current,
	coalesce(sum(b) FILTER (WHERE d BETWEEN 1 AND 30), 0)::bigint AS d30,
	coalesce(sum(b) FILTER (WHERE d BETWEEN 31 AND 60), 0)::bigint AS d60,
	coalesce(sum(b) FILTER (WHERE d BETWEEN 61 AND 90), 0)::bigint AS d90,
	coalesce(sum(b) FILTER (WHERE d > 90), 0)::bigint AS over90,
	sum(b)::bigint AS total`

const openSQL = `(SELECT currency, customer_id, total - amount_paid - amount_credited AS b, $1::date - due_date AS d
	FROM invoices WHERE status = 'issued') o WHERE b > 0`

func scanAging(row pgx.Row, prefix ...any) (Aging, error) {
	var a Aging
	err := row.Scan(append(prefix, &a.Currency, &a.Invoices, &a.Current, &a.Days1To30, &a.Days31To60, &a.Days61To90, &a.Over90, &a.Total)...)
	return a, err
}

// ReceivablesByCurrency sums every open balance by currency as of today.
func ReceivablesByCurrency(ctx context.Context, db store.Executor, today Date) ([]Aging, error) {
	rows, err := db.Query(ctx, `SELECT currency, `+agingSQL+` FROM `+openSQL+` GROUP BY currency ORDER BY currency`, today.Time)
	if err != nil {
		return nil, mapError(err, "receivables")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Aging, error) { return scanAging(r) })
	if err != nil {
		return nil, mapError(err, "receivables")
	}
	return out, nil
}

// ReceivablesByCustomer sums the open balances of up to p.Limit customers
// after p.After, in the customers' (created_at, id) order, by currency.
func ReceivablesByCustomer(ctx context.Context, db store.Executor, today Date, p page.Request) ([]*CustomerAging, error) {
	after := page.Cursor{}
	if p.After != nil {
		after = *p.After
	}
	rows, err := db.Query(ctx, `
		WITH agg AS (SELECT customer_id, currency, `+agingSQL+` FROM `+openSQL+` GROUP BY customer_id, currency),
		pc AS (
			SELECT c.id, c.name, c.created_at FROM customers c
			WHERE c.id IN (SELECT customer_id FROM agg) AND ($2::timestamptz IS NULL OR (c.created_at, c.id) > ($2, $3))
			ORDER BY c.created_at, c.id LIMIT `+fmt.Sprint(p.Limit)+`
		)
		SELECT pc.id, pc.name, pc.created_at, agg.currency, agg.n, agg.current, agg.d30, agg.d60, agg.d90, agg.over90, agg.total
		FROM pc JOIN agg ON agg.customer_id = pc.id ORDER BY pc.created_at, pc.id, agg.currency`,
		today.Time, nullTime(after.CreatedAt), after.ID)
	if err != nil {
		return nil, mapError(err, "receivables")
	}
	defer rows.Close()
	var out []*CustomerAging
	for rows.Next() {
		var c CustomerAging
		a, err := scanAging(rows, &c.CustomerID, &c.Name, &c.createdAt)
		if err != nil {
			return nil, mapError(err, "receivables")
		}
		if n := len(out); n > 0 && out[n-1].CustomerID == c.CustomerID {
			out[n-1].Balances = append(out[n-1].Balances, a)
			continue
		}
		c.Balances = []Aging{a}
		out = append(out, &c)
	}
	return out, mapError(rows.Err(), "receivables")
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

type receivablesInput struct {
	By     string `json:"by"`
	Cursor string `json:"cursor"`
	Limit  int    `json:"limit"`
}

// ReceivablesReport is the receivables-report capability: what is owed
// per currency in aging buckets as of today in the business time zone;
// with by=customer, also a page of the customers that owe.
func (s *Service) ReceivablesReport(ctx context.Context, call capability.Call) (any, error) {
	var in receivablesInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	if in.By != "customer" && in.Cursor != "" {
		return nil, problem.Invalid("cursor", "pages the customers: give it with by=customer")
	}
	p, err := ofInvoiceInput{Cursor: in.Cursor, Limit: in.Limit}.page()
	if err != nil {
		return nil, err
	}
	r := &Receivables{AsOf: s.BusinessToday(), TimeZone: s.loc.String()}
	err = store.ReadSnapshot(ctx, s.db, func(db store.Executor) error {
		if r.Currencies, err = ReceivablesByCurrency(ctx, db, r.AsOf); err != nil || in.By != "customer" {
			return err
		}
		rows, err := ReceivablesByCustomer(ctx, db, r.AsOf, p.Ahead())
		list := page.Of(rows, p.Limit)
		r.Customers = &list
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.Currencies == nil {
		r.Currencies = []Aging{}
	}
	return r, nil
}

// CapReceivables is the receivables report's capability name.
const CapReceivables = "receivables-report"

func receivablesCapabilities(svc *Service) []capability.Capability {
	return []capability.Capability{{Descriptor: capability.Descriptor{
		Name:        CapReceivables,
		Description: "Who owes us what, and for how long: the balance due of every issued invoice that still owes, per currency, in aging buckets by days past the due date (current = not yet due; days_1_30, days_31_60, days_61_90, days_over_90), as of today in the business time zone. With by=customer also a page of the customers that owe, each with their buckets per currency. Amounts are minor units.",
		InputSchema: schema(`{"type": "object", "additionalProperties": false, "properties": {
			"by": {"type": "string", "enum": ["currency", "customer"], "default": "currency"},
			"limit": ` + limitSchema + `, "cursor": ` + cursorSchema + `}}`),
		Risk: capability.RiskRead,
	}, Handler: svc.ReceivablesReport}}
}
