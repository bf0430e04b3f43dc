package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/invoices"
)

// action is what a consequential capability does, for people: the start
// of a request's title, what approving it lets the requester do, and what
// happened once the approval was used.
type action struct{ title, lets, done string }

var actions = map[string]action{
	invoices.CapIssue:           {title: "Issue invoice", lets: "issue this invoice", done: "the invoice was issued"},
	invoices.CapDelete:          {title: "Delete draft invoice", lets: "delete this draft invoice", done: "the draft invoice was deleted"},
	invoices.CapIssueCreditNote: {title: "Issue credit note", lets: "issue this credit note", done: "the credit note was issued"},
	allowances.CapGrant:         {title: "Grant standing allowance", lets: "put this allowance in force, which calls it covers then draw without asking", done: "the allowance was granted"},
}

func actionOf(capabilityName string) action {
	if a, ok := actions[capabilityName]; ok {
		return a
	}
	words := strings.ReplaceAll(capabilityName, "-", " ")
	return action{title: strings.ToUpper(words[:1]) + words[1:], lets: "make this " + words + " call", done: "the " + words + " call took effect"}
}

// requestSubject names what a request would do: "Issue invoice for
// Globex Corporation"; its title adds the amount ("… — 16,237.50 USD").
func requestSubject(a *approvals.Approval, customer string) string {
	t := actionOf(a.Capability).title
	if customer != "" {
		t += " for " + customer
	}
	return t
}

// via says where a request was asked for: the API, the chat (an agent in
// a conversation), the inbox, an MCP client or the command line.
type via struct {
	Label        string
	Agent        bool
	Conversation string
}

func viaOf(p capability.Path) via {
	if conv, ok := p.Conversation(); ok {
		return via{Label: "the chat", Agent: true, Conversation: conv}
	}
	switch p {
	case capability.PathREST:
		return via{Label: "the API"}
	case capability.PathBinding:
		return via{Label: "the API (a UI binding)"}
	case capability.PathWeb:
		return via{Label: "the inbox"}
	case capability.PathCLI:
		return via{Label: "the command line"}
	case capability.PathMCP:
		return via{Label: "an MCP client (an agent)"}
	case capability.PathSystem:
		return via{Label: "a schedule's billing run"}
	}
	return via{Label: string(p)}
}

// span is a duration as the pages say it: "24 h", "90 min", "3 days".
func span(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return fmt.Sprintf("%d min", (d+time.Minute-1)/time.Minute)
}

// approvingLets says what approving a does, for the approver about to
// decide: "Approving lets Carl Clerk issue this invoice once, within 24 h."
// ttl is how long an approval stays usable (approvals.Policy.ApprovedTTL).
func approvingLets(a *approvals.Approval, requester string, ttl time.Duration) string {
	who := requester
	if viaOf(a.RequestedVia).Agent {
		who += " (through the chat's assistant)"
	}
	does := fmt.Sprintf("%s %s once, within %s", who, actionOf(a.Capability).lets, span(ttl))
	if left := a.RequiredApprovals - a.Approvals; left > 1 {
		return fmt.Sprintf("This request needs %d more approvals; together they let %s.", left, does)
	}
	return "Approving lets " + does + "."
}
