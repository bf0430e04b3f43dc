package invoices

import "github.com/invoiced/invoiced/capability"

// Output schemas: what a successful call returns, for clients that check
// results (MCP clients validate structured results against them). They
// describe the JSON of Customer, Invoice and page.List exactly, using only
// keywords that draft-07 and draft 2020-12 read alike, since clients
// validate with either.
const (
	timeOutSchema    = `{"type": "string", "format": "date-time"}`
	timeOrNullSchema = `{"type": ["string", "null"], "format": "date-time"}`
	addressOutSchema = `{"type": "object", "required": ["lines", "postcode", "city", "subdivision", "country"],
		"properties": {"lines": {"type": "array", "items": {"type": "string"}}, "postcode": {"type": "string"}, "city": {"type": "string"},
			"subdivision": {"type": "string"}, "country": {"type": "string"}}}`
	customerOutSchema = `{
		"type": "object",
		"required": ["id", "name", "email", "currency", "address", "vat_id", "tax_number", "buyer_reference", "language", "payment_terms_days",
			"einvoice_format", "peppol_id", "version", "created_at", "updated_at"],
		"properties": {
			"id": ` + uuidSchema + `, "name": {"type": "string"}, "email": {"type": "string"},
			"currency": {"type": "string"}, "address": ` + addressOutSchema + `, "vat_id": {"type": "string"}, "tax_number": {"type": "string"},
			"buyer_reference": {"type": "string"}, "language": {"type": "string", "enum": ["en", "de", "fr"]},
			"payment_terms_days": {"type": ["integer", "null"]},
			"einvoice_format": {"type": "string", "enum": ["none", "ubl", "cii", "xrechnung-ubl", "xrechnung-cii", "peppol", "facturx"]},
			"peppol_id": {"type": "string"}, "version": {"type": "integer"},
			"created_at": ` + timeOutSchema + `, "updated_at": ` + timeOutSchema + `
		}
	}`
	lineOutFields = `"description", "quantity", "unit", "unit_amount", "vat_category", "tax_rate_bps", "exemption_reason", "exemption_code", "amount", "tax_amount"`
	lineOutProps  = `"description": {"type": "string"}, "quantity": {"type": "string", "description": "a decimal, e.g. \"7.5\""},
			"unit": {"type": "string"}, "unit_amount": {"type": "integer"},
			"vat_category": {"type": "string", "enum": ["S", "Z", "E", "AE", "K", "G", "O", "L", "M"]},
			"tax_rate_bps": {"type": "integer"}, "exemption_reason": {"type": "string"}, "exemption_code": {"type": "string"},
			"amount": {"type": "integer"}, "tax_amount": {"type": "integer", "description": "the line's share of its category and rate's VAT"}`
	lineOutSchema     = `{"type": "object", "required": [` + lineOutFields + `], "properties": {` + lineOutProps + `}}`
	vatGroupOutSchema = `{
		"type": "object",
		"required": ["vat_category", "tax_rate_bps", "taxable_amount", "tax_amount", "exemption_reason", "exemption_code"],
		"properties": {
			"vat_category": {"type": "string", "enum": ["S", "Z", "E", "AE", "K", "G", "O", "L", "M"]},
			"tax_rate_bps": {"type": "integer"}, "taxable_amount": {"type": "integer"}, "tax_amount": {"type": "integer"},
			"exemption_reason": {"type": "string"}, "exemption_code": {"type": "string"}
		}
	}`
	invoiceOutSchema = `{
		"type": "object",
		"required": ["id", "number", "status", "customer_id", "currency", "due_date", "memo", "supply_date", "service_period",
			"payment_terms_days", "purchase_order", "buyer_reference", "lines", "vat_breakdown", "tax_rounding",
			"subtotal", "tax_total", "total", "amount_paid", "amount_credited", "balance_due", "overdue", "issued_at", "voided_at", "paid_at", "version", "created_at", "updated_at", "bill_to", "seller"],
		"properties": {
			"id": ` + uuidSchema + `,
			"number": {"type": ["string", "null"]},
			"status": {"type": "string", "enum": ["draft", "issued", "paid", "void"]},
			"customer_id": ` + uuidSchema + `, "currency": {"type": "string"},
			"due_date": {"type": ["string", "null"], "format": "date"},
			"memo": {"type": "string"},
			"supply_date": {"type": ["string", "null"], "format": "date"},
			"service_period": {"type": ["object", "null"], "required": ["start", "end"],
				"properties": {"start": {"type": "string", "format": "date"}, "end": {"type": "string", "format": "date"}}},
			"payment_terms_days": {"type": ["integer", "null"]},
			"purchase_order": {"type": "string"}, "buyer_reference": {"type": "string"},
			"lines": {"type": "array", "items": ` + lineOutSchema + `},
			"vat_breakdown": {"type": "array", "items": ` + vatGroupOutSchema + `},
			"readiness": {"type": "object", "required": ["ready", "missing"], "properties": {"ready": {"type": "boolean"},
				"missing": {"type": "array", "items": {"type": "object", "required": ["field", "message"],
					"properties": {"field": {"type": "string"}, "code": {"type": "string"}, "message": {"type": "string"}}}}}},
			"tax_rounding": {"type": "string", "enum": ["group", "line"]},
			"subtotal": {"type": "integer"}, "tax_total": {"type": "integer"}, "total": {"type": "integer"},
			"amount_paid": {"type": "integer"}, "amount_credited": {"type": "integer"}, "balance_due": {"type": "integer"},
			"overdue": {"type": "boolean"},
			"issued_at": ` + timeOrNullSchema + `, "voided_at": ` + timeOrNullSchema + `, "paid_at": ` + timeOrNullSchema + `,
			"version": {"type": "integer"},
			"created_at": ` + timeOutSchema + `, "updated_at": ` + timeOutSchema + `,
			"bill_to": ` + billToOutSchema + `,
			"seller": ` + sellerOutSchema + `,
			"allowance_id": ` + uuidSchema + `,
			"allowance": ` + allowanceDrawOutSchema + `
		}
	}`
	billToOutSchema = `{"type": ["object", "null"], "required": ["name", "email", "address", "vat_id", "tax_number", "language"],
		"properties": {"name": {"type": "string"}, "email": {"type": "string"}, "address": ` + addressOutSchema + `,
			"vat_id": {"type": "string"}, "tax_number": {"type": "string"}, "language": {"type": "string"},
			"einvoice_format": {"type": "string"}, "peppol_id": {"type": "string"}}}`
	// sellerOutSchema is who issued an invoice or credit note, as at issue.
	sellerOutSchema = `{"type": ["object", "null"],
		"required": ["legal_name", "trading_name", "address", "vat_id", "tax_number", "registration", "contact", "bank_accounts", "payment_terms_days"],
		"properties": {"legal_name": {"type": "string"}, "trading_name": {"type": "string"}, "address": ` + addressOutSchema + `,
			"vat_id": {"type": "string"}, "tax_number": {"type": "string"}, "registration": {"type": "string"},
			"contact": {"type": "object", "required": ["name", "phone", "email"],
				"properties": {"name": {"type": "string"}, "phone": {"type": "string"}, "email": {"type": "string"}}},
			"bank_accounts": {"type": "array", "items": {"type": "object", "required": ["iban", "bic"],
				"properties": {"iban": {"type": "string"}, "bic": {"type": "string"}}}},
			"payment_terms_days": {"type": ["integer", "null"]}}}`
	uuidOrNullSchema = `{"type": ["string", "null"], "format": "uuid"}`
	paymentOutSchema = `{
		"type": "object",
		"required": ["id", "invoice_id", "status", "amount", "currency", "received_on", "method", "reference",
			"recorded_by", "recorded_at", "reversed_at", "reversed_by", "reversal_reason", "version"],
		"properties": {
			"id": ` + uuidSchema + `, "invoice_id": ` + uuidSchema + `,
			"status": {"type": "string", "enum": ["received", "reversed"]},
			"amount": {"type": "integer"}, "currency": {"type": "string"},
			"received_on": {"type": "string", "format": "date"},
			"method": {"type": "string", "enum": ["bank_transfer", "card", "cash", "other"]},
			"reference": {"type": "string"},
			"recorded_by": ` + uuidOrNullSchema + `, "recorded_at": ` + timeOutSchema + `,
			"reversed_at": ` + timeOrNullSchema + `, "reversed_by": ` + uuidOrNullSchema + `,
			"reversal_reason": {"type": ["string", "null"]},
			"version": {"type": "integer"},
			"invoice": ` + invoiceOutSchema + `,
			"allowance_id": ` + uuidSchema + `,
			"allowance": ` + allowanceDrawOutSchema + `
		}
	}`
	creditLineOutSchema = `{"type": "object", "required": ["invoice_line", ` + lineOutFields + `],
		"properties": {"invoice_line": {"type": ["integer", "null"]}, ` + lineOutProps + `}}`
	creditNoteOutSchema = `{
		"type": "object",
		"required": ["id", "number", "invoice_id", "invoice_number", "currency", "reason", "lines", "subtotal", "tax_total", "total",
			"bill_to", "seller", "invoice_version", "approval_id", "allowance_id", "issued_by", "issued_at"],
		"properties": {
			"id": ` + uuidSchema + `, "number": {"type": "string"}, "invoice_id": ` + uuidSchema + `, "invoice_number": {"type": "string"},
			"currency": {"type": "string"}, "reason": {"type": "string"},
			"lines": {"type": "array", "items": ` + creditLineOutSchema + `},
			"subtotal": {"type": "integer"}, "tax_total": {"type": "integer"}, "total": {"type": "integer"},
			"bill_to": ` + billToOutSchema + `,
			"seller": ` + sellerOutSchema + `,
			"invoice_version": {"type": "integer"}, "approval_id": ` + uuidOrNullSchema + `, "allowance_id": ` + uuidOrNullSchema + `,
			"issued_by": ` + uuidSchema + `, "issued_at": ` + timeOutSchema + `,
			"invoice": ` + invoiceOutSchema + `,
			"allowance": ` + allowanceDrawOutSchema + `
		}
	}`
	allowanceDrawOutSchema = `{"type": "object", "required": ["id", "remaining_total", "remaining_count", "currency", "note"],
		"description": "the standing allowance the call drew instead of an approval, and what is left of it",
		"properties": {"id": ` + uuidSchema + `, "remaining_total": {"type": "integer"}, "remaining_count": {"type": "integer"},
			"currency": {"type": "string"}, "note": {"type": "string"}}}`
	agingOutSchema = `{
		"type": "object",
		"required": ["currency", "invoices", "current", "days_1_30", "days_31_60", "days_61_90", "days_over_90", "total"],
		"properties": {
			"currency": {"type": "string"}, "invoices": {"type": "integer"}, "current": {"type": "integer"},
			"days_1_30": {"type": "integer"}, "days_31_60": {"type": "integer"}, "days_61_90": {"type": "integer"},
			"days_over_90": {"type": "integer"}, "total": {"type": "integer"}
		}
	}`
	receivablesOutSchema = `{
		"type": "object",
		"required": ["as_of", "time_zone", "currencies"],
		"properties": {
			"as_of": {"type": "string", "format": "date"}, "time_zone": {"type": "string"},
			"currencies": {"type": "array", "items": ` + agingOutSchema + `},
			"customers": ` + customerAgingPage + `
		}
	}`
	customerAgingPage = `{"type": "object", "required": ["data", "has_more", "next_cursor"], "properties": {
		"data": {"type": "array", "items": {"type": "object", "required": ["customer_id", "name", "balances"], "properties": {
			"customer_id": ` + uuidSchema + `, "name": {"type": "string"},
			"balances": {"type": "array", "items": ` + agingOutSchema + `}}}},
		"has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}}}`
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
	CapDelete:        deletedOutSchema,
	CapRecordPayment: paymentOutSchema, CapReversePayment: paymentOutSchema, CapListPayments: pageOf(paymentOutSchema),
	CapIssueCreditNote: creditNoteOutSchema, CapGetCreditNote: creditNoteOutSchema, CapListCreditNotes: pageOf(creditNoteOutSchema),
	CapReceivables: receivablesOutSchema,
}

// idempotent lists the capabilities whose repeat has no further effect:
// a second issue, void, mark-paid or reverse-payment is 409 and a second
// delete 404. Updates are not: each bumps the version, which makes
// approvals of the old version stale; nor is record-payment (a second
// payment) or issue-credit-note (a second credit, after its approval).
var idempotent = map[string]bool{CapIssue: true, CapVoid: true, CapMarkPaid: true, CapDelete: true, CapReversePayment: true}

// additive lists the capabilities that only add a record: a customer, a
// draft, a payment (reversible by reverse-payment). Every other change
// overwrites (updates), ends (void, issue) or removes (delete) something,
// or, for issue-credit-note, reduces for good what an invoice owes.
var additive = map[string]bool{CapCreateCustomer: true, CapCreateDraft: true, CapRecordPayment: true}

// titles are the capabilities' names for people (an MCP client's list).
var titles = map[string]string{
	CapListCustomers: "List customers", CapGetCustomer: "Get a customer",
	CapCreateCustomer: "Create a customer", CapUpdateCustomer: "Update a customer",
	CapListInvoices: "List invoices", CapGetInvoice: "Get an invoice",
	CapCreateDraft: "Create a draft invoice", CapUpdateDraft: "Update a draft invoice",
	CapVoid: "Void an invoice", CapMarkPaid: "Mark an invoice paid", CapIssue: "Issue an invoice",
	CapDelete:        "Delete a draft invoice",
	CapRecordPayment: "Record a payment", CapReversePayment: "Reverse a payment", CapListPayments: "List an invoice's payments",
	CapIssueCreditNote: "Issue a credit note", CapGetCreditNote: "Get a credit note", CapListCreditNotes: "List an invoice's credit notes",
	CapReceivables: "Receivables report",
}

// describeOutputs sets each capability's title, output schema and hints.
func describeOutputs(cs []capability.Capability) []capability.Capability {
	for i := range cs {
		cs[i].Title = titles[cs[i].Name]
		cs[i].OutputSchema = schema(outputSchemas[cs[i].Name])
		cs[i].Idempotent = idempotent[cs[i].Name]
		cs[i].Additive = additive[cs[i].Name]
	}
	return cs
}
