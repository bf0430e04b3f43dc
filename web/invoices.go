package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
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
	Filter    invoicesForm
	NextURL   string
}

// invoicesForm is the filter form as sent, shown back in the form.
type invoicesForm struct{ Status, CustomerID, Number, From, To string }

// invoicesQuery is the query of GET /invoices, checked: the filter and
// page to list, the form to show back, and the raw query the next-page
// link keeps.
type invoicesQuery struct {
	Form   invoicesForm
	Filter invoices.InvoiceFilter
	Page   page.Request
	Raw    url.Values
}

// parseInvoicesQuery checks the invoice list's filters and cursor as the
// REST list does (invoices.InvoiceQuery); the form's from and to are
// calendar dates, to including its whole day. A bad one is a 422 page
// naming the field.
func parseInvoicesQuery(q url.Values) (invoicesQuery, error) {
	iq := invoicesQuery{Raw: q}
	iq.Form = invoicesForm{Status: q.Get("status"), CustomerID: q.Get("customer_id"), Number: q.Get("number"), From: q.Get("from"), To: q.Get("to")}
	list := invoices.InvoiceQuery{Status: iq.Form.Status, CustomerID: iq.Form.CustomerID, Number: iq.Form.Number,
		Cursor: q.Get("cursor"), Limit: invoicePageSize}
	for _, d := range []struct {
		field, raw string
		dst        *string
		days       int
	}{{"from", iq.Form.From, &list.CreatedAfter, 0}, {"to", iq.Form.To, &list.CreatedBefore, 1}} {
		if d.raw == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, d.raw)
		if err != nil {
			return iq, problem.Invalid(d.field, "must be a date (YYYY-MM-DD)")
		}
		*d.dst = t.AddDate(0, 0, d.days).Format(time.RFC3339)
	}
	var err error
	iq.Filter, iq.Page, err = list.Parse()
	// The back office reads the invoice it just made or issued first.
	iq.Filter.NewestFirst = true
	return iq, err
}

// Invoices is the page GET /invoices: invoices read-only, newest first,
// filtered by status, customer, number and creation date, a page at a
// time.
func (h *Handler) Invoices(c echo.Context, s *Session) error {
	q, err := parseInvoicesQuery(c.QueryParams())
	if err != nil {
		return err
	}
	v, err := h.invoicesPage(c.Request().Context(), q)
	if err != nil {
		return err
	}
	d := h.data(c, s, "Invoices")
	d.Data = v
	return h.render(c, http.StatusOK, "invoices", d)
}

// invoicesPage reads one page of the invoice list with its customers'
// names, the customers the filter offers, and the link to the next page.
func (h *Handler) invoicesPage(ctx context.Context, q invoicesQuery) (invoicesView, error) {
	v := invoicesView{Statuses: []invoices.Status{invoices.StatusDraft, invoices.StatusIssued, invoices.StatusPaid, invoices.StatusVoid}, Filter: q.Form}
	rows, err := invoices.InvoiceList(ctx, h.db, q.Filter, q.Page.Ahead())
	if err != nil {
		return v, err
	}
	list := page.Of(rows, q.Page.Limit)
	if list.HasMore {
		v.NextURL = nextInvoicesURL(q.Raw, *list.NextCursor)
	}
	// The customer filter offers the first 100 customers; past that the
	// list is better searched by number.
	v.Customers, err = invoices.CustomerList(ctx, h.db, page.Request{Limit: 100})
	if err != nil {
		return v, err
	}
	names := map[uuid.UUID]string{}
	for _, cu := range v.Customers {
		names[cu.ID] = cu.Name
	}
	for _, inv := range list.Data {
		name, ok := names[inv.CustomerID]
		if !ok {
			cu, err := invoices.CustomerGetByID(ctx, h.db, inv.CustomerID)
			if err != nil {
				return v, err
			}
			name = cu.Name
			names[cu.ID] = name
		}
		v.Rows = append(v.Rows, invoiceRow{Invoice: inv, CustomerName: name})
	}
	return v, nil
}

// nextInvoicesURL is the link to the page after cursor: the same query
// with the cursor replaced.
func nextInvoicesURL(q url.Values, cursor string) string {
	next := url.Values{}
	for k, vs := range q {
		if k != "cursor" {
			next[k] = vs
		}
	}
	next.Set("cursor", cursor)
	return "/invoices?" + next.Encode()
}

type invoiceView struct {
	*invoices.Invoice
	Customer    *invoices.Customer
	Payments    []*invoices.Payment
	CreditNotes []*invoices.CreditNote
	// Issue is who asked for the invoice to be issued and who approved,
	// once it is issued.
	Issue *issueRecord
}

// issueRecord is what an issued invoice was issued under: the approval
// it spent, or the standing allowance it drew.
type issueRecord struct {
	ApprovalID  string
	RequestedBy string
	Via         via
	RequestedAt time.Time
	Approvals   []approvedBy
	IssuedAt    time.Time
	// Allowance is the standing allowance the issue drew instead of
	// spending an approval; then RequestedBy is who issued it and the
	// approval's fields are empty.
	Allowance *allowanceRef
}

type approvedBy struct {
	Name string
	At   time.Time
}

// allowanceRef names a standing allowance on a page: the inbox has no
// page per allowance to link to, so its short id and its reason.
type allowanceRef struct {
	ID     uuid.UUID
	Reason string
}

// Short is the first 8 hex digits of the id, as conversations are cited.
func (a *allowanceRef) Short() string { return a.ID.String()[:8] }

// issueRecordOf reads what inv was issued under; nil for a draft, or an
// invoice issued with neither an approval nor an allowance recorded.
func (h *Handler) issueRecordOf(ctx context.Context, inv *invoices.Invoice) (*issueRecord, error) {
	if inv.Status == invoices.StatusDraft {
		return nil, nil
	}
	e, err := issueEffectGet(ctx, h.db, inv)
	if err != nil {
		return nil, err
	}
	var a *approvals.Approval
	switch {
	case e != nil && e.AllowanceID != nil:
		return &issueRecord{RequestedBy: e.Requester, IssuedAt: e.At, Allowance: &allowanceRef{ID: *e.AllowanceID, Reason: e.AllowanceReason}}, nil
	case e != nil && e.ApprovalID != nil:
		a, err = h.deps.Approvals.Get(ctx, *e.ApprovalID)
	default:
		// No effect names what let it through (issued before migration
		// 00052 recorded effects): the approval consumed on it, if any.
		a, err = approvals.ApprovalGetConsumed(ctx, h.db, invoices.CapIssue, "invoice", inv.ID.String())
		if problem.HasCode(err, problem.CodeNotFound) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	names, err := h.peopleOf(ctx, a)
	if err != nil {
		return nil, err
	}
	r := &issueRecord{ApprovalID: a.ID.String(), RequestedBy: names.name(a.RequestedBy), Via: viaOf(a.RequestedVia),
		RequestedAt: a.CreatedAt, IssuedAt: *a.ConsumedAt}
	for _, d := range a.Decisions {
		if d.Decision == approvals.DecisionApprove && d.Counts {
			r.Approvals = append(r.Approvals, approvedBy{Name: names.name(d.Approver), At: d.DecidedAt})
		}
	}
	return r, nil
}

// Invoice is the page GET /invoices/{id}: one invoice, printable.
func (h *Handler) Invoice(c echo.Context, s *Session) error {
	inv, cu, err := h.invoiceWithCustomer(c)
	if err != nil {
		return err
	}
	if inv.BillTo != nil {
		// An issued invoice bills whom it billed when it was issued.
		frozen := *cu
		frozen.Name, frozen.Email = inv.BillTo.Name, inv.BillTo.Email
		cu = &frozen
	}
	title := "Draft invoice"
	if inv.Number != nil {
		title = "Invoice " + *inv.Number
	}
	v := invoiceView{Invoice: inv, Customer: cu}
	ctx := c.Request().Context()
	if v.Payments, err = invoices.PaymentsOf(ctx, h.db, inv.ID); err != nil {
		return err
	}
	if v.CreditNotes, err = invoices.CreditNoteList(ctx, h.db, inv.ID, page.Request{}); err != nil {
		return err
	}
	if v.Issue, err = h.issueRecordOf(ctx, inv); err != nil {
		return err
	}
	d := h.data(c, s, title)
	d.Data = v
	return h.render(c, http.StatusOK, "invoice", d)
}

// invoiceWithCustomer reads the invoice the path names and its customer.
func (h *Handler) invoiceWithCustomer(c echo.Context) (*invoices.Invoice, *invoices.Customer, error) {
	ctx := c.Request().Context()
	id, err := server.PathID(c, "invoice")
	if err != nil {
		return nil, nil, err
	}
	inv, err := invoices.InvoiceGetByID(ctx, h.db, id)
	if err != nil {
		return nil, nil, err
	}
	cu, err := invoices.CustomerGetByID(ctx, h.db, inv.CustomerID)
	if err != nil {
		return nil, nil, err
	}
	return inv, cu, nil
}

// InvoicePDF is GET /invoices/{id}/pdf: the invoice's document, as the API
// serves it, for a signed-in user of any role (the inbox sends cookies, not
// tokens). The request page links here with ?version=N, the version the
// approver decides on: a draft changed since is refused, never shown in
// its place.
func (h *Handler) InvoicePDF(c echo.Context, _ *Session) error {
	id, err := server.PathID(c, "invoice")
	if err != nil {
		return err
	}
	d, inv, err := invoices.InvoiceDocument(c.Request().Context(), h.db, id)
	if err != nil {
		return err
	}
	if v := c.QueryParam("version"); v != "" {
		want, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return problem.Invalid("version", "must be an invoice version (an integer)")
		}
		if want != inv.Version {
			return problem.Conflict(approvals.CodeApprovalStale, "the invoice has changed since this request was made (version "+
				itoa(want)+" then, "+itoa(inv.Version)+" now); the request is stale, so this is not what it would issue")
		}
	}
	if err := invoices.RequireSeller(d.Seller); err != nil {
		return err
	}
	// The page CSP (default-src 'none') is for HTML; on a PDF it could
	// stop the browser's viewer. The other page headers stay.
	c.Response().Header().Del("Content-Security-Policy")
	return invoices.WritePDF(c, d)
}

// currentVersion is the target invoice's version now, to tell the
// approver that a request no longer matches the invoice; false when the
// target is not an invoice or is gone.
func (h *Handler) currentVersion(ctx context.Context, a *approvals.Approval) (int64, bool) {
	if a.Target.Type != "invoice" {
		return 0, false
	}
	id, err := uuid.Parse(a.Target.ID)
	if err != nil {
		return 0, false
	}
	inv, err := invoices.InvoiceGetByID(ctx, h.db, id)
	if err != nil {
		return 0, false
	}
	return inv.Version, true
}
