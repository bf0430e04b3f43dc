package invoices

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
)

// InvoiceQuery asks for one page of invoices, each member as the client
// sent it (empty: not given): the list-invoices capability's input (REST
// and the model) and what the web list's form becomes. Parse is the one
// check of it.
type InvoiceQuery struct {
	Status        string `json:"status"`
	CustomerID    string `json:"customer_id"`
	Number        string `json:"number"`
	CreatedAfter  string `json:"created_after"`  // RFC 3339, inclusive
	CreatedBefore string `json:"created_before"` // RFC 3339, exclusive
	// Overdue: only overdue invoices (true) or none of them (false).
	Overdue *bool  `json:"overdue"`
	Cursor  string `json:"cursor"`
	Limit   int    `json:"limit"`
}

// Parse checks q into the filter and page InvoiceList reads: a member that
// is not what it should be is a 422 naming it.
func (q InvoiceQuery) Parse() (InvoiceFilter, page.Request, error) {
	var f InvoiceFilter
	switch st := Status(q.Status); st {
	case "":
	case StatusDraft, StatusIssued, StatusPaid, StatusVoid:
		f.Status = st
	default:
		return f, page.Request{}, problem.Invalid("status", "must be draft, issued, paid or void")
	}
	if q.CustomerID != "" {
		id, err := uuid.Parse(q.CustomerID)
		if err != nil {
			return f, page.Request{}, problem.Invalid("customer_id", "is not a customer id")
		}
		f.CustomerID = &id
	}
	f.Number, f.Overdue = q.Number, q.Overdue
	for _, r := range []struct {
		field, raw string
		dst        **time.Time
	}{{"created_after", q.CreatedAfter, &f.CreatedAfter}, {"created_before", q.CreatedBefore, &f.CreatedBefore}} {
		if r.raw == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, r.raw)
		if err != nil {
			return f, page.Request{}, problem.Invalid(r.field, "must be an RFC 3339 date-time")
		}
		*r.dst = &t
	}
	p := page.Request{Limit: q.Limit}
	if q.Cursor != "" {
		after, err := page.ParseCursor(q.Cursor)
		if err != nil {
			return f, page.Request{}, err
		}
		p.After = after
	}
	return f, p, nil
}

// InvoiceListAll is the list-invoices capability.
func (s *Service) InvoiceListAll(ctx context.Context, call capability.Call) (any, error) {
	var q InvoiceQuery
	if err := decode(call, &q); err != nil {
		return nil, err
	}
	f, p, err := q.Parse()
	if err != nil {
		return nil, err
	}
	f.Today = s.BusinessToday()
	rows, err := InvoiceList(ctx, s.db, f, p.Ahead())
	if err != nil {
		return nil, err
	}
	for _, inv := range rows {
		inv.dated(f.Today)
	}
	return page.Of(rows, p.Limit), nil
}
