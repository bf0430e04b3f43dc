package invoices

import (
	"encoding/json"

	"github.com/invoiced/invoiced/capability"
)

// Capability names, shared with the REST routes and tests.
const (
	CapListCustomers  = "list-customers"
	CapGetCustomer    = "get-customer"
	CapCreateCustomer = "create-customer"
	CapUpdateCustomer = "update-customer"
	CapListInvoices   = "list-invoices"
	CapGetInvoice     = "get-invoice"
	CapCreateDraft    = "create-draft-invoice"
	CapUpdateDraft    = "update-draft-invoice"
	CapVoid           = "void-invoice"
	CapMarkPaid       = "mark-invoice-paid"
	CapIssue          = "issue-invoice"
	CapDelete         = "delete-invoice"
)

// Schema fragments. Limits: 1,000 lines of 1,000 characters each keep an
// invoice (and the snapshot an approver reads) within the 1 MB body limit;
// amounts are integers within ±2^53 (the registry refuses larger ones).
const (
	uuidSchema     = `{"type": "string", "format": "uuid"}`
	currencySchema = `{"type": "string", "pattern": "^[A-Z]{3}$", "description": "ISO 4217 code, e.g. EUR, JPY, BHD; fixes how many minor units make one major unit"}`
	lineSchema     = `{
		"type": "object",
		"additionalProperties": false,
		"required": ["description", "quantity", "unit_amount"],
		"properties": {
			"description": {"type": "string", "format": "visible-text", "minLength": 1, "maxLength": 1000, "description": "one line the approver reads: something visible, no bidirectional controls or line breaks"},
			"quantity": ` + quantitySchema + `,
			"unit": {"type": "string", "pattern": "^[A-Z0-9]{2,3}$", "description": "unit of measure, a UN/ECE Recommendation 20 code: HUR hours, DAY days, WEE weeks, MON months, C62 units (the default), H87 pieces, KGM kilograms, MTR metres, LTR litres, KWH kilowatt hours, LS lump sum"},
			"unit_amount": {"type": "integer", "minimum": 0, "description": "price of one unit in minor units of the invoice currency (cents for EUR, yen for JPY, fils for BHD)"},
			"vat_category": {"type": "string", "enum": ["S", "Z", "E", "AE", "K", "G", "O", "L", "M"], "description": "UNCL 5305 VAT category: S standard rate, Z zero rated, E exempt, AE reverse charge (the buyer accounts for the VAT), K intra-community supply, G export outside the EU, O outside the scope of VAT, L Canary Islands (IGIC), M Ceuta and Melilla (IPSI). Default: S when tax_rate_bps is above 0, else Z"},
			"tax_rate_bps": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 0, "description": "VAT rate in basis points: 1900 is 19 %; above 0 for S, 0 for Z, E, AE, K, G and O"},
			"exemption_reason": {"type": "string", "format": "plain-text", "maxLength": 1000, "description": "why a line of category E, AE, K, G or O carries no VAT, as the invoice states it; defaults to the category's usual wording (\"Reverse charge\", \"Intra-community supply\", …)"},
			"exemption_code": {"type": "string", "pattern": "^VATEX-[A-Z0-9-]+$", "maxLength": 30, "description": "the reason's code from the CEF VATEX list, e.g. VATEX-EU-AE"}
		}
	}`
	// quantitySchema: 14 whole digits stay within quantity.Quantity's
	// ±922,337,203,685,477.
	quantitySchema = `{"type": ["string", "integer"], "pattern": "^[0-9]{1,14}(\\.[0-9]{1,4})?$", "minimum": 1, "maximum": 99999999999999, "description": "a decimal with at most 4 decimals, as a string (\"7.5\", \"0.125\"); a whole number may be sent as a JSON integer"}`
	memoSchema     = `{"type": "string", "format": "plain-text", "maxLength": 2000, "description": "free text; line breaks allowed, no bidirectional or other control characters"}`
	dueDateSchema  = `{"type": ["string", "null"], "format": "date", "description": "YYYY-MM-DD, not before the issue date"}`
	termsSchema    = `"supply_date": {"type": ["string", "null"], "format": "date", "description": "YYYY-MM-DD the goods or services were supplied, where not the issue date"},
		"service_period": {"type": ["object", "null"], "additionalProperties": false, "required": ["start", "end"], "description": "the period invoiced, instead of a date of supply",
			"properties": {"start": {"type": "string", "format": "date"}, "end": {"type": "string", "format": "date"}}},
		"payment_terms_days": {"type": ["integer", "null"], "minimum": 0, "maximum": 365, "description": "days net: on issue the due date is the issue date plus these (the customer's or the seller's terms when null); instead of due_date"},
		"purchase_order": {"type": "string", "maxLength": 200, "description": "the buyer's purchase order number"},
		"buyer_reference": {"type": "string", "maxLength": 200, "description": "the reference the buyer asks for (a German Leitweg-ID); empty takes the customer's"}`
	limitSchema   = `{"type": "integer", "minimum": 1, "maximum": 100, "default": 20}`
	cursorSchema  = `{"type": "string", "maxLength": 512, "description": "next_cursor of the previous page"}`
	nameSchema    = `{"type": "string", "format": "visible-text", "minLength": 1, "maxLength": 200, "description": "shown to approvers: something visible, no bidirectional controls or line breaks"}`
	emailSchema   = `{"type": "string", "format": "email", "maxLength": 254}`
	addressSchema = `{"type": "object", "additionalProperties": false, "description": "postal address", "properties": {
		"lines": {"type": "array", "maxItems": 3, "items": {"type": "string", "format": "visible-text", "minLength": 1, "maxLength": 100}, "description": "street lines"},
		"postcode": {"type": "string", "maxLength": 16}, "city": {"type": "string", "maxLength": 100},
		"subdivision": {"type": "string", "maxLength": 100, "description": "state, county or region where addresses use one"},
		"country": {"type": "string", "pattern": "^[A-Za-z]{2}$", "description": "ISO 3166-1 alpha-2 code, e.g. DE"}}}`
	customerFieldsSchema = `"address": ` + addressSchema + `,
		"vat_id": {"type": "string", "maxLength": 30, "description": "VAT identification number with its country prefix (DE123456789, CHE123456789MWST); checked for its country's form and check digits, not looked up online; empty clears it"},
		"tax_number": {"type": "string", "maxLength": 50, "description": "national tax number, where there is no VAT id"},
		"buyer_reference": {"type": "string", "maxLength": 200, "description": "the reference the buyer asks invoices to quote (a German Leitweg-ID)"},
		"language": {"type": "string", "enum": ["en", "de", "fr"], "description": "the language of their documents; en when created without"},
		"payment_terms_days": {"type": ["integer", "null"], "minimum": 0, "maximum": 365, "description": "days net their invoices give; null: the seller's"},
		"einvoice_format": {"type": "string", "enum": ["none", "ubl", "cii", "xrechnung-ubl", "xrechnung-cii", "peppol", "facturx"], "description": "the e-invoice they take (none: the PDF alone); issuing checks their drafts against the format's rules: XRechnung needs a buyer reference (Leitweg-ID), Peppol their peppol_id"},
		"peppol_id": {"type": "string", "maxLength": 260, "description": "their Peppol participant id, scheme:identifier (0088:4035811991021, 9930:DE136695976); empty clears it"}`
	targetSchema   = `{"type": "object", "additionalProperties": false, "required": ["invoice_id"], "properties": {"invoice_id": ` + uuidSchema + `}}`
	customerTarget = `{"type": "object", "additionalProperties": false, "required": ["customer_id"], "properties": {"customer_id": ` + uuidSchema + `}}`
)

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// Capabilities returns the invoicing capabilities over svc, for app/ to
// register. Descriptions are written for a model to read.
func Capabilities(svc *Service) []capability.Capability {
	caps := append(customerCapabilities(svc), invoiceCapabilities(svc)...)
	caps = append(caps, paymentCapabilities(svc)...)
	caps = append(caps, creditNoteCapabilities(svc)...)
	return describeOutputs(append(caps, receivablesCapabilities(svc)...))
}

func customerCapabilities(svc *Service) []capability.Capability {
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name:        CapListCustomers,
			Description: "List customers, oldest first, a page at a time. Use it to find a customer's id before creating an invoice. Returns {data: [customer], has_more, next_cursor}; pass next_cursor as cursor to get the next page.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "properties": {"limit": ` + limitSchema + `, "cursor": ` + cursorSchema + `}}`),
			Risk:        capability.RiskRead,
		}, Handler: svc.CustomerListAll},
		{Descriptor: capability.Descriptor{
			Name:        CapGetCustomer,
			Description: "Get one customer by customer_id. Returns the customer: id, name, email, currency (their default invoice currency), version.",
			InputSchema: schema(customerTarget),
			Risk:        capability.RiskRead,
		}, Handler: svc.CustomerGet},
		{Descriptor: capability.Descriptor{
			Name:        CapCreateCustomer,
			Description: "Create a customer to send invoices to. currency is the ISO 4217 code their invoices default to. An invoice is issued only once its buyer has a postal address (and a VAT id where its VAT categories need one), so give them when you know them. Returns the new customer with its id.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["name", "currency"], "properties": {"name": ` + nameSchema + `, "email": ` + emailSchema + `, "currency": ` + currencySchema + `, ` + customerFieldsSchema + `}}`),
			Risk:        capability.RiskBound,
		}, Handler: svc.CustomerCreate},
		{Descriptor: capability.Descriptor{
			Name:        CapUpdateCustomer,
			Description: "Change a customer's name, email, default currency, postal address, VAT id, tax number, buyer reference, language, payment terms, e-invoice format or Peppol id; fields left out stay as they are (an address sent replaces the whole address). Existing invoices keep their own currency; issued ones keep the customer as it was. Returns the updated customer.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["customer_id"], "properties": {"customer_id": ` + uuidSchema + `, "name": ` + nameSchema + `, "email": ` + emailSchema + `, "currency": ` + currencySchema + `, ` + customerFieldsSchema + `}}`),
			Risk:        capability.RiskBound,
		}, Handler: svc.CustomerUpdate},
	}
}

func invoiceCapabilities(svc *Service) []capability.Capability {
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name:        CapListInvoices,
			Description: "List invoices, oldest first, a page at a time, optionally filtered by status (draft, issued, paid, void), customer_id, exact number (e.g. INV-2026-000042), creation time range (created_after inclusive, created_before exclusive, RFC 3339) or overdue (true: issued, still owing and past the due date). Each invoice has amount_paid, amount_credited and balance_due. Returns {data: [invoice], has_more, next_cursor}.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "properties": {
				"status": {"type": "string", "enum": ["draft", "issued", "paid", "void"]},
				"customer_id": ` + uuidSchema + `,
				"number": {"type": "string", "maxLength": 64},
				"created_after": {"type": "string", "format": "date-time"},
				"created_before": {"type": "string", "format": "date-time"},
				"overdue": {"type": "boolean", "description": "true: only invoices past their due date (in the business time zone) that still owe; false: all others"},
				"limit": ` + limitSchema + `, "cursor": ` + cursorSchema + `}}`),
			Risk: capability.RiskRead,
		}, Handler: svc.InvoiceListAll},
		{Descriptor: capability.Descriptor{
			Name:        CapGetInvoice,
			Description: "Get one invoice by invoice_id, with its lines, totals (subtotal, tax_total, total in minor units of its currency), status and number (null until issued).",
			InputSchema: schema(targetSchema),
			Risk:        capability.RiskRead,
		}, Handler: svc.InvoiceGet},
		{Descriptor: capability.Descriptor{
			Name:        CapCreateDraft,
			Description: "Create a draft invoice for a customer. Amounts are integers in minor units of the currency (which defaults to the customer's). Tax per line is in basis points and rounded half-even. A draft has no number and can be changed freely until it is issued. Returns the draft with computed line amounts and totals.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["customer_id"], "properties": {
				"customer_id": ` + uuidSchema + `, "currency": ` + currencySchema + `, "due_date": ` + dueDateSchema + `,
				"memo": ` + memoSchema + `, "lines": ` + linesSchema + `, ` + termsSchema + `}}`),
			Risk: capability.RiskBound,
		}, Handler: svc.DraftCreate},
		{Descriptor: capability.Descriptor{
			Name:        CapUpdateDraft,
			Description: "Change a draft invoice: customer_id, due_date (null clears it), memo, or lines (which replace all lines). Its currency cannot change. Only drafts can be changed; issued invoices are immutable. Returns the updated draft.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["invoice_id"], "properties": {
				"invoice_id": ` + uuidSchema + `, "customer_id": ` + uuidSchema + `, "currency": ` + currencySchema + `,
				"due_date": ` + dueDateSchema + `, "memo": ` + memoSchema + `, "lines": ` + linesSchema + `, ` + termsSchema + `}}`),
			Risk: capability.RiskBound,
		}, Handler: svc.DraftUpdate},
		{Descriptor: capability.Descriptor{
			Name:        CapVoid,
			Description: "Void an issued invoice that should not be paid (its number stays used). Only issued invoices with nothing paid or credited can be voided (otherwise credit what is still owed with issue-credit-note); drafts are deleted instead. This needs an approval by a back-office approver: without one the answer is APPROVAL_REQUIRED with an approval_id; do not retry until it is approved. Returns the voided invoice.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["invoice_id"], "properties": {"invoice_id": ` + uuidSchema + `, "reason": {"type": "string", "format": "plain-text", "maxLength": 1000}}}`),
			Risk:        capability.RiskConsequential,
		}, Handler: svc.Void},
		{Descriptor: capability.Descriptor{
			Name:        CapMarkPaid,
			Description: "Record that an issued invoice has been paid in full: a payment of its whole balance_due, received today (record-payment records one with its date, method and reference). Only issued invoices can be marked paid. A large balance needs an approval by a back-office approver under the approval policy: then the answer is APPROVAL_REQUIRED with an approval_id; do not retry until it is approved. Returns the paid invoice.",
			InputSchema: schema(targetSchema),
			Risk:        capability.RiskBound,
			Governed:    true,
		}, Handler: svc.MarkPaid},
		{Descriptor: capability.Descriptor{
			Name:        CapIssue,
			Description: "Issue a draft invoice: it gets the next gapless number and becomes immutable. A draft that is not yet a legal invoice (the seller's or the customer's address or VAT id missing, a reverse charge without the customer's VAT id, …) is refused with INVOICE_INCOMPLETE, whose errors name each missing fact (field, code, message): ask the user for them, update the customer or the draft, and try again; get-invoice's readiness says the same beforehand. A complete draft needs an approval by a back-office approver: without one the answer is APPROVAL_REQUIRED with an approval_id to wait on; do not retry until it is approved. Returns the issued invoice with its number.",
			InputSchema: schema(targetSchema),
			Risk:        capability.RiskConsequential,
		}, Handler: svc.Issue},
		{Descriptor: capability.Descriptor{
			Name:        CapDelete,
			Description: "Delete a draft invoice for good. Issued invoices cannot be deleted (void them instead). This needs an approval by a back-office approver: without one the answer is APPROVAL_REQUIRED with an approval_id. Returns {id, deleted: true}.",
			InputSchema: schema(targetSchema),
			Risk:        capability.RiskConsequential,
		}, Handler: svc.Delete},
	}
}

// LinesSchema is the JSON Schema of an invoice's lines, for what holds
// templates of them (a schedule's lines).
const LinesSchema = linesSchema

const linesSchema = `{"type": "array", "maxItems": 1000, "items": ` + lineSchema + `}`
