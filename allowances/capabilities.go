package allowances

import (
	"encoding/json"

	"github.com/invoiced/invoiced/capability"
)

const (
	uuidSchema      = `{"type": "string", "format": "uuid"}`
	timeOutSchema   = `{"type": "string", "format": "date-time"}`
	userOutSchema   = `{"type": "object", "required": ["id", "username"], "properties": {"id": ` + uuidSchema + `, "username": {"type": "string"}}}`
	allowanceSchema = `{
		"type": "object",
		"required": ["id", "capability", "capabilities", "customer_ids", "currency", "max_total", "max_count", "remaining_total", "remaining_count",
			"valid_until", "reason", "status", "requested_by", "approval_id", "deciders", "created_at", "revoked_at", "revoked_by", "version"],
		"properties": {
			"id": ` + uuidSchema + `,
			"capability": {"type": "string", "enum": ["issue", "credit", "void", "payments"]},
			"capabilities": {"type": "array", "items": {"type": "string"}, "description": "the capabilities whose calls draw it"},
			"customer_ids": {"type": ["array", "null"], "items": ` + uuidSchema + `, "description": "null: every customer"},
			"currency": {"type": "string"},
			"max_total": {"type": "integer"}, "max_count": {"type": "integer"},
			"remaining_total": {"type": "integer"}, "remaining_count": {"type": "integer"},
			"valid_until": ` + timeOutSchema + `,
			"reason": {"type": "string"},
			"status": {"type": "string", "enum": ["active", "exhausted", "expired", "revoked"]},
			"requested_by": ` + userOutSchema + `,
			"approval_id": ` + uuidSchema + `,
			"deciders": {"type": "array", "items": ` + uuidSchema + `, "description": "who approved it; they never draw it"},
			"created_at": ` + timeOutSchema + `,
			"revoked_at": {"type": ["string", "null"], "format": "date-time"},
			"revoked_by": {"anyOf": [{"type": "null"}, ` + userOutSchema + `]},
			"revoke_reason": {"type": "string"},
			"version": {"type": "integer"}
		}
	}`
)

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// Capabilities returns the allowance capabilities over svc, for app/ to
// register. Descriptions are written for a model to read.
func Capabilities(svc *Service) []capability.Capability {
	var grant, list, get capability.Handler
	if svc != nil {
		grant, list, get = svc.Grant, svc.ListCap, svc.GetCap
	}
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name:  CapGrant,
			Title: "Ask for a standing allowance",
			Description: "Ask for a standing allowance: a budget of calls of one kind (issue: issue-invoice; credit: issue-credit-note; void: void-invoice; payments: mark-invoice-paid and record-payment) " +
				"in one currency, for the customers named in customer_ids (null: every customer), up to max_total minor units and max_count calls, until valid_until. " +
				"Once in force, each such call inside it draws it down instead of asking for an approval, and its result says which allowance it drew and what is left; " +
				"calls outside it or over its caps ask for an approval as before. Use it for routine runs (a month's invoices), never to avoid one approval. " +
				"It needs an approval itself, judged as a call of what it covers for its whole max_total: without one the answer is APPROVAL_REQUIRED with an approval_id; " +
				"once approved, the same call creates it. Returns the allowance with id, status, remaining_total and remaining_count.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["capability", "customer_ids", "currency", "max_total", "max_count", "valid_until", "reason"], "properties": {
				"capability": {"type": "string", "enum": ["issue", "credit", "void", "payments"]},
				"customer_ids": {"type": ["array", "null"], "maxItems": 100, "items": ` + uuidSchema + `, "description": "the customers it covers; null: every customer"},
				"currency": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "ISO 4217 code; only calls in this currency draw it"},
				"max_total": {"type": "integer", "description": "the most all drawing calls may add up to, in minor units of currency (at least 1)"},
				"max_count": {"type": "integer", "description": "the most calls that may draw it (at least 1)"},
				"valid_until": {"type": "string", "format": "date-time", "description": "RFC 3339; in the future and at most 366 days ahead"},
				"reason": {"type": "string", "maxLength": 2000, "description": "what the budget is for, as approvers will read it"}}}`),
			OutputSchema: schema(allowanceSchema),
			Risk:         capability.RiskConsequential,
			// It adds an allowance and changes nothing else; the same
			// call again is refused (ALLOWANCE_EXISTS).
			Additive: true, Idempotent: true,
		}, Handler: grant},
		{Descriptor: capability.Descriptor{
			Name:        CapList,
			Title:       "List standing allowances",
			Description: "List standing allowances, newest first, a page at a time, each with status (active, exhausted, expired, revoked), remaining_total and remaining_count. Returns {data: [allowance], has_more, next_cursor}.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "properties": {
				"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
				"cursor": {"type": "string", "maxLength": 512, "description": "next_cursor of the previous page"}}}`),
			OutputSchema: schema(`{"type": "object", "required": ["data", "has_more", "next_cursor"], "properties": {
				"data": {"type": "array", "items": ` + allowanceSchema + `}, "has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}}}`),
			Risk: capability.RiskRead,
		}, Handler: list},
		{Descriptor: capability.Descriptor{
			Name:         CapGet,
			Title:        "Get a standing allowance",
			Description:  "Get one standing allowance by allowance_id: what it covers, its caps, what is left, until when, and its status.",
			InputSchema:  schema(`{"type": "object", "additionalProperties": false, "required": ["allowance_id"], "properties": {"allowance_id": ` + uuidSchema + `}}`),
			OutputSchema: schema(allowanceSchema),
			Risk:         capability.RiskRead,
		}, Handler: get},
	}
}
