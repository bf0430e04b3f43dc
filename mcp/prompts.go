package mcp

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/invoiced/invoiced/problem"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// addPrompts offers the back office's two routine jobs as prompts, so a
// client's user sees what the server is for.
func addPrompts(srv *gomcp.Server) {
	srv.AddPrompt(&gomcp.Prompt{
		Name: "review-overdue-invoices", Title: "Review overdue invoices",
		Description: "List issued invoices whose due date has passed and summarise them by customer.",
		Arguments: []*gomcp.PromptArgument{{Name: "as_of", Title: "As of",
			Description: "The date (YYYY-MM-DD) to judge overdue by; today if left out."}},
	}, reviewOverdue)
	srv.AddPrompt(&gomcp.Prompt{
		Name: "prepare-monthly-drafts", Title: "Prepare this month's drafts for approval",
		Description: "Create this month's draft invoices and request their approval for issue.",
		Arguments: []*gomcp.PromptArgument{{Name: "month", Title: "Month",
			Description: "The month to bill (YYYY-MM); this month if left out."}},
	}, prepareDrafts)
}

var (
	dateRE  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	monthRE = regexp.MustCompile(`^\d{4}-\d{2}$`)
)

// argument returns a prompt argument, or def when it is absent; a value
// that does not match re is refused, naming the argument.
func argument(req *gomcp.GetPromptRequest, name, def string, re *regexp.Regexp) (string, error) {
	v := req.Params.Arguments[name]
	if v == "" {
		return def, nil
	}
	if !re.MatchString(v) {
		return "", fmt.Errorf("%s: argument %s: %q is not in the expected format", problem.CodeValidation, name, v)
	}
	return v, nil
}

func reviewOverdue(_ context.Context, req *gomcp.GetPromptRequest) (*gomcp.GetPromptResult, error) {
	asOf, err := argument(req, "as_of", time.Now().UTC().Format(time.DateOnly), dateRE)
	if err != nil {
		return nil, err
	}
	return userPrompt("Overdue invoices as of "+asOf, fmt.Sprintf(
		`Review the invoices that are overdue as of %s.
1. Call list-invoices with status "issued" and read every page (pass next_cursor as cursor until has_more is false).
2. Keep the invoices whose due_date is before %s.
3. For each customer (get-customer for the name), list the overdue invoices: number, due date, total in major units of the currency, days overdue.
4. End with the total overdue per currency. Change nothing: this is a review.`, asOf, asOf)), nil
}

func prepareDrafts(_ context.Context, req *gomcp.GetPromptRequest) (*gomcp.GetPromptResult, error) {
	month, err := argument(req, "month", time.Now().UTC().Format("2006-01"), monthRE)
	if err != nil {
		return nil, err
	}
	return userPrompt("Drafts for "+month, fmt.Sprintf(
		`Prepare the draft invoices for %s.
1. Call list-customers and read every page.
2. Ask me which customers to bill for %s and what to bill each (lines: description, quantity, unit amount in minor units, tax rate in basis points), unless I said so already.
3. For each, call create-draft-invoice. Each call asks me to confirm its exact input; if I decline, leave that one out.
4. Then call issue-invoice for each draft. It will not issue yet: it files an approval request for a back-office approver and answers APPROVAL_REQUIRED with an approval_id.
5. List the drafts (id, customer, total) with their approval ids and resources (invoiced://approvals/{id}), which I can watch for the decisions.`, month, month)), nil
}

func userPrompt(desc, text string) *gomcp.GetPromptResult {
	return &gomcp.GetPromptResult{Description: desc, Messages: []*gomcp.PromptMessage{
		{Role: "user", Content: &gomcp.TextContent{Text: text}},
	}}
}
