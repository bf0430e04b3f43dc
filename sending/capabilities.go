package sending

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/page"
	"github.com/labstack/echo/v4"
)

// Capability names.
const (
	CapSendInvoice            = "send-invoice"
	CapSendCreditNote         = "send-credit-note"
	CapListInvoiceSendings    = "list-invoice-sendings"
	CapListCreditNoteSendings = "list-credit-note-sendings"
)

const (
	uuidSchema = `{"type": "string", "format": "uuid"}`
	toSchema   = `{"type": "string", "format": "email", "maxLength": 254, "description": "the address to mail; the customer's email when left out"}`
	pageSchema = `"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}, "cursor": {"type": "string", "maxLength": 512, "description": "next_cursor of the previous page"}`
	// SendingSchema is a sending as the capabilities answer it.
	SendingSchema = `{"type": "object", "required": ["id", "invoice_id", "credit_note_id", "number", "to", "subject", "documents", "message_id", "status", "reminder_level", "requested_by", "requested_at", "sent_at", "failed_at"], "properties": {
		"id": ` + uuidSchema + `, "invoice_id": {"type": ["string", "null"]}, "credit_note_id": {"type": ["string", "null"]},
		"number": {"type": "string"}, "to": {"type": "string"}, "subject": {"type": "string"},
		"documents": {"type": "array", "items": {"type": "object", "required": ["format", "filename", "content_type", "size", "sha256"], "properties": {
			"format": {"type": "string"}, "filename": {"type": "string"}, "content_type": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"}}}},
		"message_id": {"type": "string"}, "status": {"type": "string", "enum": ["queued", "sent", "failed"]},
		"reminder_level": {"type": ["integer", "null"]}, "requested_by": {"type": ["string", "null"]}, "requested_at": {"type": "string"}, "sent_at": {"type": ["string", "null"]}, "failed_at": {"type": ["string", "null"]},
		"error": {"type": "string"}}}`
	listSchema = `{"type": "object", "required": ["data", "has_more", "next_cursor"], "properties": {"data": {"type": "array", "items": ` + SendingSchema + `}, "has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}}}`
)

// Capabilities returns the sending capabilities over svc, for app/ to
// register. Sending is bound (ADR-0005): in the chat the user confirms
// each mail in the browser, over MCP the client asks its user. A mail
// adds a sending and overwrites nothing, but it reaches someone outside
// the service (MCP's openWorldHint).
func Capabilities(svc *Service) []capability.Capability {
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name:  CapSendInvoice,
			Title: "Mail an invoice",
			Description: "Mail an issued (or paid) invoice to its customer: the PDF, or the Factur-X PDF, and the e-invoice XML their einvoice_format asks for, to the customer's email or to. Sending again sends again (a resend). " +
				"Refused for drafts and void invoices (INVALID_TRANSITION), when neither the customer nor the input has an address (VALIDATION_FAILED on to), and when this server has no mail server (MAIL_NOT_CONFIGURED). Returns the sending: status queued until the mail server takes it, then sent.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["invoice_id"], "properties": {"invoice_id": ` + uuidSchema + `, "to": ` + toSchema + `}}`),
			OutputSchema: json.RawMessage(SendingSchema),
			Risk:         capability.RiskBound,
			Additive:     true,
			OpenWorld:    true,
		}, Handler: svc.SendInvoice},
		{Descriptor: capability.Descriptor{
			Name:         CapSendCreditNote,
			Title:        "Mail a credit note",
			Description:  "Mail a credit note to the customer of the invoice it corrects, as send-invoice mails an invoice. Returns the sending.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["credit_note_id"], "properties": {"credit_note_id": ` + uuidSchema + `, "to": ` + toSchema + `}}`),
			OutputSchema: json.RawMessage(SendingSchema),
			Risk:         capability.RiskBound,
			Additive:     true,
			OpenWorld:    true,
		}, Handler: svc.SendCreditNote},
		{Descriptor: capability.Descriptor{
			Name:         CapListInvoiceSendings,
			Title:        "List an invoice's mailings",
			Description:  "List the times an invoice was mailed to its customer, oldest first: to whom, which documents, the Message-ID, and whether the mail server took it (status sent) or it is still queued or failed. Returns {data: [sending], has_more, next_cursor}.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["invoice_id"], "properties": {"invoice_id": ` + uuidSchema + `, ` + pageSchema + `}}`),
			OutputSchema: json.RawMessage(listSchema),
			Risk:         capability.RiskRead,
		}, Handler: svc.listOf("invoice_id")},
		{Descriptor: capability.Descriptor{
			Name:         CapListCreditNoteSendings,
			Title:        "List a credit note's mailings",
			Description:  "List the times a credit note was mailed, as list-invoice-sendings does for an invoice. Returns {data: [sending], has_more, next_cursor}.",
			InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["credit_note_id"], "properties": {"credit_note_id": ` + uuidSchema + `, ` + pageSchema + `}}`),
			OutputSchema: json.RawMessage(listSchema),
			Risk:         capability.RiskRead,
		}, Handler: svc.listOf("credit_note_id")},
	}
}

type listInput struct {
	InvoiceID    uuid.UUID `json:"invoice_id"`
	CreditNoteID uuid.UUID `json:"credit_note_id"`
	Limit        int       `json:"limit"`
	Cursor       string    `json:"cursor"`
}

// listOf is the list capability of the sendings of what column names:
// a page, or 404 when there is no such invoice or credit note.
func (s *Service) listOf(column string) capability.Handler {
	return func(ctx context.Context, call capability.Call) (any, error) {
		var in listInput
		if err := decode(call, &in); err != nil {
			return nil, err
		}
		id := in.InvoiceID
		if column == "credit_note_id" {
			id = in.CreditNoteID
		}
		p := page.Request{Limit: in.Limit}
		if in.Cursor != "" {
			after, err := page.ParseCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			p.After = after
		}
		rows, err := SendingList(ctx, s.db, column, id, p.Ahead())
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			if err := documentExists(ctx, s.db, column, id); err != nil {
				return nil, err
			}
		}
		return page.Of(rows, p.Limit), nil
	}
}

// Handler serves the sending routes over the invoices' REST helpers.
type Handler struct {
	Inv *invoices.Handler
}

// InvoiceSend serves POST /v1/invoices/{id}/send: 202, the sending queued.
func (h *Handler) InvoiceSend(c echo.Context) error {
	return h.Inv.Run(c, CapSendInvoice, "invoice_id", "invoice", http.StatusAccepted)
}

// CreditNoteSend serves POST /v1/credit-notes/{id}/send.
func (h *Handler) CreditNoteSend(c echo.Context) error {
	return h.Inv.Run(c, CapSendCreditNote, "credit_note_id", "credit note", http.StatusAccepted)
}

// InvoiceSendings serves GET /v1/invoices/{id}/sendings.
func (h *Handler) InvoiceSendings(c echo.Context) error {
	return h.Inv.ListUnder(c, CapListInvoiceSendings, "invoice_id", "invoice")
}

// CreditNoteSendings serves GET /v1/credit-notes/{id}/sendings.
func (h *Handler) CreditNoteSendings(c echo.Context) error {
	return h.Inv.ListUnder(c, CapListCreditNoteSendings, "credit_note_id", "credit note")
}
