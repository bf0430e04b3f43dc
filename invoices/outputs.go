package invoices

import "github.com/invoiced/invoiced/capability"

// Output schemas: what a successful call returns, for clients that check
// results (MCP clients validate structured results against them). They
// describe the JSON of Customer, Invoice and page.List exactly, using only
// keywords that draft-07 and draft 2020-12 read alike, since clients
// validate with either.
const (
	timeOutSchema     = `{"type": "string", "format": "date-time"}`
	timeOrNullSchema  = `{"type": ["string", "null"], "format": "date-time"}`
	customerOutSchema = `{
		"type": "object",
		"required": ["id", "name", "email", "currency", "version", "created_at", "updated_at"],
		"properties": {
			"id": ` + uuidSchema + `, "name": {"type": "string"}, "email": {"type": "string"},
			"currency": {"type": "string"}, "version": {"type": "integer"},
			"created_at": ` + timeOutSchema + `, "updated_at": ` + timeOutSchema + `
		}
	}`
	lineOutSchema = `{
		"type": "object",
		"required": ["description", "quantity", "unit_amount", "tax_rate_bps", "amount", "tax_amount"],
		"properties": {
			"description": {"type": "string"}, "quantity": {"type": "integer"}, "unit_amount": {"type": "integer"},
			"tax_rate_bps": {"type": "integer"}, "amount": {"type": "integer"}, "tax_amount": {"type": "integer"}
		}
	}`
	invoiceOutSchema = `{
		"type": "object",
		"required": ["id", "number", "status", "customer_id", "currency", "due_date", "memo", "lines",
			"subtotal", "tax_total", "total", "issued_at", "voided_at", "paid_at", "version", "created_at", "updated_at", "bill_to"],
		"properties": {
			"id": ` + uuidSchema + `,
			"number": {"type": ["string", "null"]},
			"status": {"type": "string", "enum": ["draft", "issued", "paid", "void"]},
			"customer_id": ` + uuidSchema + `, "currency": {"type": "string"},
			"due_date": {"type": ["string", "null"], "format": "date"},
			"memo": {"type": "string"},
			"lines": {"type": "array", "items": ` + lineOutSchema + `},
			"subtotal": {"type": "integer"}, "tax_total": {"type": "integer"}, "total": {"type": "integer"},
			"issued_at": ` + timeOrNullSchema + `, "voided_at": ` + timeOrNullSchema + `, "paid_at": ` + timeOrNullSchema + `,
			"version": {"type": "integer"},
			"created_at": ` + timeOutSchema + `, "updated_at": ` + timeOutSchema + `,
			"bill_to": {"type": ["object", "null"], "required": ["name", "email"],
				"properties": {"name": {"type": "string"}, "email": {"type": "string"}}}
		}
	}`
	deletedOutSchema = `{"type": "object", "required": ["id", "deleted"],
		"properties": {"id": ` + uuidSchema + `, "deleted": {"type": "boolean", "const": true}}}`
)

// pageOf is the schema of a page.List of items.
func pageOf(items string) string {
	return `{"type": "object", "required": ["data", "has_more", "next_cursor"], "properties": {
		"data": {"type": "array", "items": ` + items + `},
		"has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}}}`
}

// outputSchemas names each capability's output schema.
var outputSchemas = map[string]string{
	CapListCustomers: pageOf(customerOutSchema), CapGetCustomer: customerOutSchema,
	CapCreateCustomer: customerOutSchema, CapUpdateCustomer: customerOutSchema,
	CapListInvoices: pageOf(invoiceOutSchema), CapGetInvoice: invoiceOutSchema,
	CapCreateDraft: invoiceOutSchema, CapUpdateDraft: invoiceOutSchema,
	CapVoid: invoiceOutSchema, CapMarkPaid: invoiceOutSchema, CapIssue: invoiceOutSchema,
	CapDelete: deletedOutSchema,
}

// idempotent lists the capabilities whose repeat has no further effect:
// a second issue, void or mark-paid is 409 INVALID_TRANSITION and a second
// delete 404. Updates are not: each bumps the version, which makes
// approvals of the old version stale.
var idempotent = map[string]bool{CapIssue: true, CapVoid: true, CapMarkPaid: true, CapDelete: true}

// describeOutputs sets each capability's output schema and idempotency.
func describeOutputs(cs []capability.Capability) []capability.Capability {
	for i := range cs {
		cs[i].OutputSchema = schema(outputSchemas[cs[i].Name])
		cs[i].Idempotent = idempotent[cs[i].Name]
	}
	return cs
}
