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
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves the REST routes. Each is sugar over one capability: it
// builds the capability input from the path, query and body and runs it
// through the registry, so REST gets the same validation and gates as
// /v1/capabilities/{name}/invoke and the step loop.
type Handler struct {
	Caps *caphttp.Handler
	// Seller issues the documents (INVOICED_SELLER_*).
	Seller document.Party
}

// body reads and parses the JSON object of a request (empty means {}),
// the one parse of it, and sets key to the path id. What only Prepare can
// name (invalid UTF-8, a body that is not an object) is left to it.
func body(c echo.Context, key string, id uuid.UUID) (*jsondoc.Doc, error) {
	raw, err := server.ReadBody(c)
	if err != nil {
		return nil, err // the body limit's 413
	}
	doc, err := capability.ParseInput(raw)
	if err != nil || key == "" {
		return doc, err
	}
	if _, bad := doc.First(jsondoc.InvalidUTF8); bad {
		return doc, nil
	}
	obj, ok := doc.Value.(map[string]any)
	if !ok {
		return doc, nil
	}
	// Before the path id joins the members.
	if path, dup := doc.First(jsondoc.DuplicateKey); dup {
		return nil, problem.Invalid(path, "%s", jsondoc.DuplicateKey.Message())
	}
	if _, ok := obj[key]; ok {
		return nil, problem.Invalid(key, "is taken from the path; leave it out of the body")
	}
	obj[key] = id.String()
	return doc, nil
}

// pathID returns the {id} path parameter; an id that is not a UUID in its
// canonical form cannot exist, so it is a 404 like any other unknown id.
func pathID(c echo.Context, what string) (uuid.UUID, error) {
	raw := c.Param("id")
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != len(uuid.Nil.String()) {
		return uuid.Nil, problem.NotFound(what)
	}
	return id, nil
}

func (h *Handler) run(c echo.Context, name, key, what string, status int) error {
	id, err := pathID(c, what)
	if err != nil {
		return err
	}
	in, err := body(c, key, id)
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
// sent as a number when it is one (so the schema judges it), everything
// else as a string; an unknown parameter is refused by the schema.
func (h *Handler) list(c echo.Context, name string) error {
	in := map[string]any{}
	for k, vs := range c.QueryParams() {
		v := vs[len(vs)-1]
		// json.Marshal below would quietly turn bad bytes into U+FFFD.
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return problem.Invalid(strings.ToValidUTF8(k, "\ufffd"), "%s", jsondoc.InvalidUTF8.Message())
		}
		if k == "limit" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				in[k] = n
				continue
			}
		}
		in[k] = v
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

func (h *Handler) created(c echo.Context, name, location string) error {
	in, err := body(c, "", uuid.Nil)
	if err != nil {
		return err
	}
	out, err := h.Caps.Run(c, name, in, capability.PathREST)
	if err != nil {
		return err
	}
	if v, ok := out.(interface{ locationID() string }); ok {
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
	return h.run(c, CapGetCustomer, "customer_id", "customer", http.StatusOK)
}

// CustomerUpdate serves PATCH /v1/customers/{id}.
func (h *Handler) CustomerUpdate(c echo.Context) error {
	return h.run(c, CapUpdateCustomer, "customer_id", "customer", http.StatusOK)
}

// InvoiceCreate serves POST /v1/invoices (a draft).
func (h *Handler) InvoiceCreate(c echo.Context) error {
	return h.created(c, CapCreateDraft, "/v1/invoices/")
}

// InvoiceList serves GET /v1/invoices.
func (h *Handler) InvoiceList(c echo.Context) error { return h.list(c, CapListInvoices) }

// InvoiceGet serves GET /v1/invoices/{id}.
func (h *Handler) InvoiceGet(c echo.Context) error {
	return h.run(c, CapGetInvoice, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceUpdate serves PATCH /v1/invoices/{id}.
func (h *Handler) InvoiceUpdate(c echo.Context) error {
	return h.run(c, CapUpdateDraft, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceIssue serves POST /v1/invoices/{id}/issue.
func (h *Handler) InvoiceIssue(c echo.Context) error {
	return h.run(c, CapIssue, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceVoid serves POST /v1/invoices/{id}/void.
func (h *Handler) InvoiceVoid(c echo.Context) error {
	return h.run(c, CapVoid, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceMarkPaid serves POST /v1/invoices/{id}/mark-paid.
func (h *Handler) InvoiceMarkPaid(c echo.Context) error {
	return h.run(c, CapMarkPaid, "invoice_id", "invoice", http.StatusOK)
}

// InvoiceDelete serves DELETE /v1/invoices/{id}: 204 on success.
func (h *Handler) InvoiceDelete(c echo.Context) error {
	return h.run(c, CapDelete, "invoice_id", "invoice", http.StatusNoContent)
}

// InvoicePDF serves GET /v1/invoices/{id}/pdf: the invoice as its PDF. It
// is a rendering of get-invoice (and, for a draft, which bills its
// customer as they are now, of get-customer), not a capability of its
// own: it reads through those, so whoever may read the invoice may have
// its document, and an agent, which cannot use a PDF, reads the JSON.
func (h *Handler) InvoicePDF(c echo.Context) error {
	if err := RequireSeller(h.Seller); err != nil {
		return err
	}
	id, err := pathID(c, "invoice")
	if err != nil {
		return err
	}
	inv, err := runRead[*Invoice](h, c, CapGetInvoice, "invoice_id", id)
	if err != nil {
		return err
	}
	var cu *Customer
	if inv.BillTo == nil {
		if cu, err = runRead[*Customer](h, c, CapGetCustomer, "customer_id", inv.CustomerID); err != nil {
			return err
		}
	}
	c.Response().Header().Set("Cache-Control", "private, no-cache")
	return WritePDF(c, Document(inv, cu, h.Seller))
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
// same for the same document, so a client holding them gets a 304.
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
	if noneMatch(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, "application/pdf", pdf)
}

// noneMatch reports whether an If-None-Match header names etag (weakly
// compared, as RFC 9110 §13.1.2 asks) or is "*".
func noneMatch(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}
