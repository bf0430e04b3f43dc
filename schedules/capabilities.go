package schedules

import (
	"encoding/json"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/invoices"
)

// The capabilities' names.
const (
	CapCreate = "create-schedule"
	CapUpdate = "update-schedule"
	CapList   = "list-schedules"
)

const (
	scheduleSchema = `{"type": "object", "required": ["id", "customer_id", "currency", "every", "day_of_month", "start", "end", "count", "lines",
		"payment_terms_days", "issue", "allowance_id", "created_by", "created_at", "updated_at", "deleted_at", "version"], "properties": {
		"id": {"type": "string", "format": "uuid"},
		"customer_id": {"type": "string", "format": "uuid"},
		"currency": {"type": "string"},
		"every": {"type": "string"},
		"day_of_month": {"type": ["integer", "null"]},
		"start": {"type": "string", "format": "date"},
		"end": {"type": ["string", "null"], "format": "date"},
		"count": {"type": ["integer", "null"]},
		"lines": {"type": "array", "items": {"type": "object"}},
		"payment_terms_days": {"type": ["integer", "null"]},
		"issue": {"type": "string", "enum": ["never", "under_allowance"]},
		"allowance_id": {"type": ["string", "null"], "format": "uuid"},
		"created_by": {"type": "string", "format": "uuid"},
		"created_at": {"type": "string", "format": "date-time"},
		"updated_at": {"type": "string", "format": "date-time"},
		"deleted_at": {"type": ["string", "null"], "format": "date-time"},
		"version": {"type": "integer"}}}`
)

// Capabilities returns the schedule capabilities over svc, for app/ to
// register. Descriptions are written for a model to read.
func Capabilities(svc *Service) []capability.Capability {
	var create, update, list capability.Handler
	if svc != nil {
		create, update, list = svc.CreateCap, svc.UpdateCap, svc.ListCap
	}
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name:  CapCreate,
			Title: "Create a recurring invoice schedule",
			Description: "Create a schedule that drafts one invoice per period for one customer: every N days, weeks, months or years (every: \"1 month\", \"2 weeks\"), " +
				"from start (YYYY-MM-DD), until end or for count periods. With a cadence in months or years, day_of_month (1-31) is the day each period begins, " +
				"a short month's last day standing for a day it lacks. lines are invoice lines; \"{period}\" in a description becomes the period. " +
				"Each period's draft is made once, on its first day in the business time zone, with the period as its service period; " +
				"issue never leaves it for a person to issue. Returns the schedule with its id.",
			InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["customer_id", "every", "start", "lines", "issue"], "properties": {
				"customer_id": {"type": "string", "format": "uuid"},
				"currency": {"type": "string", "description": "ISO 4217 code; default the customer's"},
				"every": {"type": "string", "description": "N days|weeks|months|years, such as \"1 month\""},
				"day_of_month": {"type": "integer", "description": "1-31, for a cadence in months or years; default the start's day"},
				"start": {"type": "string", "description": "YYYY-MM-DD: the first period begins on or after it"},
				"end": {"type": "string", "description": "YYYY-MM-DD: no period begins after it"},
				"count": {"type": "integer", "description": "at most this many periods"},
				"lines": ` + invoices.LinesSchema + `,
				"payment_terms_days": {"type": "integer", "description": "days net, 0-365"},
				"issue": {"type": "string", "description": "never, or under_allowance with allowance_id"},
				"allowance_id": {"type": "string", "format": "uuid", "description": "a standing allowance for issue in the schedule's currency"}}}`),
			OutputSchema: json.RawMessage(scheduleSchema),
			Risk:         capability.RiskBound,
			// It adds a schedule and changes nothing there is.
			Additive: true,
		}, Handler: create},
		{Descriptor: capability.Descriptor{
			Name:  CapUpdate,
			Title: "Change a recurring invoice schedule",
			Description: "Change a schedule's end, count, lines, payment_terms_days, or issue with allowance_id; members left out stay as they are, " +
				"and null clears end, count or payment_terms_days. lines replace all lines. The cadence, start, day_of_month, customer and currency cannot change " +
				"(delete the schedule and create another). Periods already drafted keep their drafts; the next ones follow the change. " +
				"Switching issue to under_allowance issues only the periods drafted from then on. Returns the schedule.",
			InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["schedule_id"], "properties": {
				"schedule_id": {"type": "string", "format": "uuid"},
				"end": {"type": ["string", "null"], "description": "YYYY-MM-DD: no period begins after it; null: no end"},
				"count": {"type": ["integer", "null"], "description": "at most this many periods in all; null: no limit"},
				"lines": ` + invoices.LinesSchema + `,
				"payment_terms_days": {"type": ["integer", "null"], "description": "days net, 0-365; null: the customer's"},
				"issue": {"type": "string", "enum": ["never", "under_allowance"]},
				"allowance_id": {"type": ["string", "null"], "format": "uuid", "description": "a standing allowance for issue in the schedule's currency"}}}`),
			OutputSchema: json.RawMessage(scheduleSchema),
			Risk:         capability.RiskBound,
		}, Handler: update},
		{Descriptor: capability.Descriptor{
			Name:        CapList,
			Title:       "List recurring invoice schedules",
			Description: "List the schedules in force, newest first, a page at a time. Returns {data: [schedule], has_more, next_cursor}.",
			InputSchema: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {
				"limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
				"cursor": {"type": "string", "maxLength": 512, "description": "next_cursor of the previous page"}}}`),
			OutputSchema: json.RawMessage(`{"type": "object", "required": ["data", "has_more", "next_cursor"], "properties": {
				"data": {"type": "array", "items": ` + scheduleSchema + `}, "has_more": {"type": "boolean"}, "next_cursor": {"type": ["string", "null"]}}}`),
			Risk: capability.RiskRead,
		}, Handler: list},
	}
}
