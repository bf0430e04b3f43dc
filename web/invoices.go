package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

// invoicePageSize is how many invoices one list page shows: 50 rows fit a
// printed page's worth of scrolling and keep the page under 100 ms.
const invoicePageSize = 50

type invoiceRow struct {
	*invoices.Invoice
	CustomerName string
}

type invoicesView struct {
	Rows      []invoiceRow
	Customers []*invoices.Customer
	Statuses  []invoices.Status
	Filter    struct{ Status, CustomerID, Number, From, To string }
	NextURL   string
}

// invoices lists invoices read-only, filtered by status, customer, number
// and creation date, a page at a time.
func (h *Handler) invoices(c echo.Context, s *Session) error {
	ctx := c.Request().Context()
	v := invoicesView{Statuses: []invoices.Status{invoices.StatusDraft, invoices.StatusIssued, invoices.StatusPaid, invoices.StatusVoid}}
	q := c.QueryParams()
	v.Filter.Status, v.Filter.CustomerID, v.Filter.Number = q.Get("status"), q.Get("customer_id"), q.Get("number")
	v.Filter.From, v.Filter.To = q.Get("from"), q.Get("to")

	var f invoices.InvoiceFilter
	switch st := invoices.Status(v.Filter.Status); st {
	case "":
	case invoices.StatusDraft, invoices.StatusIssued, invoices.StatusPaid, invoices.StatusVoid:
		f.Status = st
	default:
		return problem.Invalid("status", "must be draft, issued, paid or void")
	}
	if v.Filter.CustomerID != "" {
		id, err := uuid.Parse(v.Filter.CustomerID)
		if err != nil {
			return problem.Invalid("customer_id", "is not a customer id")
		}
		f.CustomerID = &id
	}
	f.Number = v.Filter.Number
	for _, d := range []struct {
		field, raw string
		dst        **time.Time
		days       int
	}{{"from", v.Filter.From, &f.CreatedAfter, 0}, {"to", v.Filter.To, &f.CreatedBefore, 1}} {
		if d.raw == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, d.raw)
		if err != nil {
			return problem.Invalid(d.field, "must be a date (YYYY-MM-DD)")
		}
		t = t.AddDate(0, 0, d.days) // "to" includes its whole day
		*d.dst = &t
	}
	page := invoices.Page{Limit: invoicePageSize + 1}
	if cur := q.Get("cursor"); cur != "" {
		after, err := invoices.ParseCursor(cur)
		if err != nil {
			return err
		}
		page.After = after
	}
	rows, err := invoices.InvoiceList(ctx, h.db, f, page)
	if err != nil {
		return err
	}
	if len(rows) > invoicePageSize {
		rows = rows[:invoicePageSize]
		last := rows[len(rows)-1]
		next := url.Values{}
		for k, vs := range q {
			if k != "cursor" {
				next[k] = vs
			}
		}
		next.Set("cursor", invoices.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}.Encode())
		v.NextURL = "/invoices?" + next.Encode()
	}
	// The customer filter offers the first 100 customers; past that the
	// list is better searched by number.
	v.Customers, err = invoices.CustomerList(ctx, h.db, invoices.Page{Limit: 100})
	if err != nil {
		return err
	}
	names := map[uuid.UUID]string{}
	for _, cu := range v.Customers {
		names[cu.ID] = cu.Name
	}
	for _, inv := range rows {
		name, ok := names[inv.CustomerID]
		if !ok {
			cu, err := invoices.CustomerGetByID(ctx, h.db, inv.CustomerID)
			if err != nil {
				return err
			}
			name = cu.Name
			names[cu.ID] = name
		}
		v.Rows = append(v.Rows, invoiceRow{Invoice: inv, CustomerName: name})
	}
	d := h.data(c, s, "Invoices")
	d.Data = v
	return h.render(c, http.StatusOK, "invoices", d)
}

type invoiceView struct {
	*invoices.Invoice
	Customer *invoices.Customer
}

// invoice shows one invoice as a printable page.
func (h *Handler) invoice(c echo.Context, s *Session) error {
	ctx := c.Request().Context()
	id, err := parseID(c, "invoice")
	if err != nil {
		return err
	}
	inv, err := invoices.InvoiceGetByID(ctx, h.db, id)
	if err != nil {
		return err
	}
	cu, err := invoices.CustomerGetByID(ctx, h.db, inv.CustomerID)
	if err != nil {
		return err
	}
	title := "Draft invoice"
	if inv.Number != nil {
		title = "Invoice " + *inv.Number
	}
	d := h.data(c, s, title)
	d.Data = invoiceView{Invoice: inv, Customer: cu}
	return h.render(c, http.StatusOK, "invoice", d)
}

// currentVersion is the target invoice's version now, to tell the
// approver that a request no longer matches the invoice; false when the
// target is not an invoice or is gone.
func (h *Handler) currentVersion(c echo.Context, a *approvals.Approval) (int64, bool) {
	if a.Target.Type != "invoice" {
		return 0, false
	}
	id, err := uuid.Parse(a.Target.ID)
	if err != nil {
		return 0, false
	}
	inv, err := invoices.InvoiceGetByID(c.Request().Context(), h.db, id)
	if err != nil {
		return 0, false
	}
	return inv.Version, true
}
