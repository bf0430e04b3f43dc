package invoices

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/capability/caphttp"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/labstack/echo/v4"
)

// Handler serves the REST routes. Each is sugar over one capability: it
// builds the capability input from the path, query and body and runs it
// through the registry, so REST gets the same validation and gates as
// /v1/capabilities/{name}/invoke and the step loop.
type Handler struct {
	Caps *caphttp.Handler
	// DB is read for a document, after the capability the document
	// renders allowed the read.
	DB store.Executor
}

// Run serves a route that runs capability name on the request's body
// with the path's {id} as member key (what names it in a 404), answering
// status with the output; the routes of other packages over invoices and
// credit notes (sending) use it too.
func (h *Handler) Run(c echo.Context, name, key, what string, status int) error {
	id, err := server.PathID(c, what)
	if err != nil {
		return err
	}
	in, err := caphttp.Body(c, key, id)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, name, in, capability.PathREST)
	if err != nil {
		return err
	}
	if status == http.StatusNoContent {
		return c.NoContent(status)
	}
	return caphttp.Respond(c, status, out)
}

// list builds a list capability's input from the query string: limit is
// sent as a number when it is one and overdue as a boolean when it is one
// (so the schema judges them), everything else as a string; an unknown
// parameter is refused by the schema.
func (h *Handler) list(c echo.Context, name string) error {
	return h.ListUnder(c, name, "", "")
}

// ListUnder is list of what the path's {id} holds: key (its member in the
// input) is that id, unless key is "".
func (h *Handler) ListUnder(c echo.Context, name, key, what string) error {
	in := map[string]any{}
	if key != "" {
		id, err := server.PathID(c, what)
		if err != nil {
			return err
		}
		in[key] = id.String()
	}
	for k, vs := range c.QueryParams() {
		v := vs[len(vs)-1]
		// json.Marshal below would quietly turn bad bytes into U+FFFD.
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return problem.Invalid(strings.ToValidUTF8(k, "\ufffd"), "%s", jsondoc.InvalidUTF8.Message())
		}
		if k == key {
			return problem.Invalid(key, "is taken from the path; leave it out of the query")
		}
		in[k] = queryValue(k, v)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	doc, err := capability.ParseInput(raw)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, name, doc, capability.PathREST)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// queryValue is a query parameter as the schema should judge it.
func queryValue(k, v string) any {
	switch k {
	case "limit":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	case "overdue":
		if v == "true" || v == "false" {
			return v == "true"
		}
	}
	return v
}

// created runs name on the request's body and answers 201, with the
// Location of the new resource (under location) when it has one.
func (h *Handler) created(c echo.Context, name, location string) error {
	in, err := caphttp.Body(c, "", uuid.Nil)
	if err != nil {
		return err
	}
	return h.respondCreated(c, name, in, location)
}

// createdUnder is created of something the path's {id} holds: key (its
// member in the input) is that id.
func (h *Handler) createdUnder(c echo.Context, name, key, what, location string) error {
	id, err := server.PathID(c, what)
	if err != nil {
		return err
	}
	in, err := caphttp.Body(c, key, id)
	if err != nil {
		return err
	}
	return h.respondCreated(c, name, in, location)
}

func (h *Handler) respondCreated(c echo.Context, name string, in *jsondoc.Doc, location string) error {
	out, err := h.Caps.Run(c, name, in, capability.PathREST)
	if err != nil {
		return err
	}
	if v, ok := out.(interface{ locationID() string }); ok && location != "" {
		c.Response().Header().Set(echo.HeaderLocation, location+v.locationID())
	}
	return caphttp.Respond(c, http.StatusCreated, out)
}

func (c *Customer) locationID() string  { return c.ID.String() }
func (inv *Invoice) locationID() string { return inv.ID.String() }

// CustomerCreate serves POST /v1/customers.
func (h *Handler) CustomerCreate(c echo.Context) error {
	return h.created(c, CapCreateCustomer, "/v1/customers/")
}

// CustomerList serves GET /v1/customers.
func (h *Handler) CustomerList(c echo.Context) error { return h.list(c, CapListCustomers) }

// CustomerGet serves GET /v1/customers/{id}.
func (h *Handler) CustomerGet(c echo.Context) error {
	return h.Run(c, CapGetCustomer, "customer_id", "customer", http.StatusOK)
}

// CustomerUpdate serves PATCH /v1/customers/{id}.
func (h *Handler) CustomerUpdate(c echo.Context) error {
	return h.Run(c, CapUpdateCustomer, "customer_id", "customer", http.StatusOK)
}

// InvoiceCreate serves POST /v1/invoices (a draft).
func (h *Handler) InvoiceCreate(c echo.Context) error {
	return h.created(c, CapCreateDraft, "/v1/invoices/")
}

// InvoiceList serves GET /v1/invoices.
func (h *Handler) InvoiceList(c echo.Context) error { return h.list(c, CapListInvoices) }

// InvoiceGet serves GET /v1/invoices/{id}.
func (h *Handler) InvoiceGet(c echo.Context) error {
	return h.Run(c, CapGetInvoice, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceUpdate serves PATCH /v1/invoices/{id}.
func (h *Handler) InvoiceUpdate(c echo.Context) error {
	return h.Run(c, CapUpdateDraft, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceIssue serves POST /v1/invoices/{id}/issue.
func (h *Handler) InvoiceIssue(c echo.Context) error {
	return h.Run(c, CapIssue, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceVoid serves POST /v1/invoices/{id}/void.
func (h *Handler) InvoiceVoid(c echo.Context) error {
	return h.Run(c, CapVoid, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceMarkPaid serves POST /v1/invoices/{id}/mark-paid.
func (h *Handler) InvoiceMarkPaid(c echo.Context) error {
	return h.Run(c, CapMarkPaid, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceDelete serves DELETE /v1/invoices/{id}: 204 on success.
func (h *Handler) InvoiceDelete(c echo.Context) error {
	return h.Run(c, CapDelete, "invoice_id", "invoice", http.StatusNoContent)
}

// CreditNoteIssue serves POST /v1/invoices/{id}/credit-notes: 201 with
// the credit note and its Location.
func (h *Handler) CreditNoteIssue(c echo.Context) error {
	return h.createdUnder(c, CapIssueCreditNote, "invoice_id", "invoice", "/v1/credit-notes/")
}

// CreditNoteList serves GET /v1/invoices/{id}/credit-notes.
func (h *Handler) CreditNoteList(c echo.Context) error {
	return h.ListUnder(c, CapListCreditNotes, "invoice_id", "invoice")
}

// CreditNoteGet serves GET /v1/credit-notes/{id}.
func (h *Handler) CreditNoteGet(c echo.Context) error {
	return h.Run(c, CapGetCreditNote, "credit_note_id", "credit note", http.StatusOK)
}

// PaymentRecord serves POST /v1/invoices/{id}/payments: 201 with the
// payment (which has no resource of its own: it is listed under its
// invoice).
func (h *Handler) PaymentRecord(c echo.Context) error {
	return h.createdUnder(c, CapRecordPayment, "invoice_id", "invoice", "")
}

// PaymentList serves GET /v1/invoices/{id}/payments.
func (h *Handler) PaymentList(c echo.Context) error {
	return h.ListUnder(c, CapListPayments, "invoice_id", "invoice")
}

// PaymentReverse serves POST /v1/payments/{id}/reverse.
func (h *Handler) PaymentReverse(c echo.Context) error {
	return h.Run(c, CapReversePayment, "payment_id", "payment", http.StatusOK)
}

// Receivables serves GET /v1/reports/receivables.
func (h *Handler) Receivables(c echo.Context) error { return h.list(c, CapReceivables) }

// InvoicePDF serves GET /v1/invoices/{id}/pdf: the invoice as its PDF. It
// is a rendering of get-invoice, not a capability of its own: it reads
// the invoice through get-invoice, so whoever may read the invoice may
// have its document, and an agent, which cannot use a PDF, reads the
// JSON. The document's own read (the invoice with its customer, payments
// and credit notes) is one snapshot.
func (h *Handler) InvoicePDF(c echo.Context) error {
	id, err := server.PathID(c, "invoice")
	if err != nil {
		return err
	}
	if _, err := runRead[*Invoice](h, c, CapGetInvoice, "invoice_id", id); err != nil {
		return err
	}
	d, _, err := InvoiceDocument(c.Request().Context(), h.DB, id)
	if err != nil {
		return err
	}
	if err := RequireSeller(d.Seller); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, no-cache")
	return WritePDF(c, d)
}

// CreditNotePDF serves GET /v1/credit-notes/{id}/pdf, a rendering of
// get-credit-note. A credit note never changes, so neither do its bytes.
func (h *Handler) CreditNotePDF(c echo.Context) error {
	id, err := server.PathID(c, "credit note")
	if err != nil {
		return err
	}
	cn, err := runRead[*CreditNote](h, c, CapGetCreditNote, "credit_note_id", id)
	if err != nil {
		return err
	}
	var current *Seller
	if cn.Seller == nil {
		if current, err = CurrentSeller(c.Request().Context(), h.DB); err != nil {
			return err
		}
	}
	d := CreditNoteDocument(cn, current)
	if err := RequireSeller(d.Seller); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, no-cache")
	return WritePDF(c, d)
}

// runRead runs the read capability name on the object {key: id}.
func runRead[T any](h *Handler, c echo.Context, name, key string, id uuid.UUID) (T, error) {
	var zero T
	in, err := capability.ParseInput([]byte(`{"` + key + `":"` + id.String() + `"}`))
	if err != nil {
		return zero, err
	}
	out, err := h.Caps.Run(c, name, in, capability.PathREST)
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

// WritePDF renders d and answers with it, shown inline and named by its
// number (or draft-<id>). The ETag is a hash of the bytes, which are the
// same for the same document, so a client holding them gets a 304 (the
// server's If-None-Match middleware).
func WritePDF(c echo.Context, d *document.Document) error {
	pdf, err := document.Render(d)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(pdf)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hd := c.Response().Header()
	hd.Set("ETag", etag)
	hd.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": d.FileName()}))
	return c.Blob(http.StatusOK, "application/pdf", pdf)
}

// InvoiceEInvoice serves GET /v1/invoices/{id}/einvoice?format=…: the
// issued invoice as an e-invoice, a rendering of get-invoice as the PDF
// is. format defaults to the one the customer took when it was issued.
func (h *Handler) InvoiceEInvoice(c echo.Context) error {
	id, err := server.PathID(c, "invoice")
	if err != nil {
		return err
	}
	f, err := queryFormat(c)
	if err != nil {
		return err
	}
	if _, err := runRead[*Invoice](h, c, CapGetInvoice, "invoice_id", id); err != nil {
		return err
	}
	e, inv, err := InvoiceEInvoice(c.Request().Context(), h.DB, id)
	if err != nil {
		return err
	}
	if f == "" && inv.BillTo != nil {
		f = inv.BillTo.EInvoiceFormat
	}
	return writeEInvoice(c, e, f)
}

// CreditNoteEInvoice serves GET /v1/credit-notes/{id}/einvoice?format=…,
// a rendering of get-credit-note.
func (h *Handler) CreditNoteEInvoice(c echo.Context) error {
	id, err := server.PathID(c, "credit note")
	if err != nil {
		return err
	}
	f, err := queryFormat(c)
	if err != nil {
		return err
	}
	cn, err := runRead[*CreditNote](h, c, CapGetCreditNote, "credit_note_id", id)
	if err != nil {
		return err
	}
	var current *Seller
	if cn.Seller == nil {
		if current, err = CurrentSeller(c.Request().Context(), h.DB); err != nil {
			return err
		}
	}
	e, err := CreditNoteEInvoice(cn, current)
	if err != nil {
		return err
	}
	if f == "" {
		f = cn.BillTo.EInvoiceFormat
	}
	return writeEInvoice(c, e, f)
}

// queryFormat is the format query parameter, "" when absent.
func queryFormat(c echo.Context) (einvoice.Format, error) {
	s := c.QueryParam("format")
	if s == "" {
		return "", nil
	}
	return einvoice.ParseFormat("format", s)
}

// CodeFormatRequired is the 422 problem code of an e-invoice asked for
// without a format, of a document whose customer took none.
const CodeFormatRequired = "EINVOICE_FORMAT_REQUIRED"

// writeEInvoice answers with e in format f, as an attachment named by
// its number; the ETag is a hash of the bytes, the same for the same
// document (304 to a client that holds them, through the server's
// If-None-Match middleware).
func writeEInvoice(c echo.Context, e einvoice.Invoice, f einvoice.Format) error {
	if f == "" || f == einvoice.None {
		e := problem.New(http.StatusUnprocessableEntity, CodeFormatRequired,
			"the customer took no e-invoice format when this was issued: name one with ?format=")
		e.Errors = []problem.FieldError{{Field: "format", Code: CodeFormatRequired, Message: "is required"}}
		return e
	}
	b, err := einvoice.Generate(e, f)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	hd := c.Response().Header()
	hd.Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	hd.Set("Cache-Control", "private, no-cache")
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": einvoice.FileName(e.Number, f)}))
	return c.Blob(http.StatusOK, f.ContentType(), b)
}
