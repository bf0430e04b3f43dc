// Package approvals holds durable approval records (ADR-0010): the requests a
// consequential capability call creates, the decisions approvers make on
// them, the policy that says who may decide and how many must agree, the
// transactional gate that consumes an approval in the same transaction as
// its effect, the LISTEN/NOTIFY hub that wakes long polls and SSE streams on
// every replica, and the inbox routes.
package approvals

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
)

// Status is where an approval request is in its life.
type Status string

// The statuses: pending → approved | denied | expired | cancelled |
// superseded, and approved → consumed | expired.
const (
	StatusPending    Status = "pending"
	StatusApproved   Status = "approved"
	StatusDenied     Status = "denied"
	StatusExpired    Status = "expired"
	StatusCancelled  Status = "cancelled"
	StatusSuperseded Status = "superseded"
	StatusConsumed   Status = "consumed"
)

// ParseStatus validates a status name (the list filter).
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusPending, StatusApproved, StatusDenied, StatusExpired, StatusCancelled, StatusSuperseded, StatusConsumed:
		return st, nil
	}
	return "", problem.Invalid("status", "must be one of pending, approved, denied, expired, cancelled, superseded, consumed")
}

// Open reports whether the request can still change by a decision or by use.
func (s Status) Open() bool { return s == StatusPending || s == StatusApproved }

// Stable problem codes of this package.
const (
	CodeApprovalRequired   = "APPROVAL_REQUIRED"
	CodeApprovalDenied     = "APPROVAL_DENIED"
	CodeApprovalExpired    = "APPROVAL_EXPIRED"
	CodeApprovalStale      = "APPROVAL_STALE"
	CodeNoEligibleApprover = "NO_ELIGIBLE_APPROVER"
	CodeNotPending         = "APPROVAL_NOT_PENDING"
	CodeAlreadyDecided     = "APPROVAL_ALREADY_DECIDED"
)

// Target is what the request acts on, as it was when requested.
type Target struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

// UserRef names a user in a response.
type UserRef struct {
	ID       uuid.UUID `json:"id"`
	Username string    `json:"username"`
}

// Decision is one approver's decision on a request.
type Decision struct {
	Approver UserRef `json:"approver"`
	// OnBehalfOf is the delegator whose approvals Approver held and on
	// whose authority alone they decided (they were not among the
	// request's deciders themselves); nil otherwise.
	OnBehalfOf *UserRef  `json:"on_behalf_of,omitempty"`
	Decision   string    `json:"decision"`
	Reason     string    `json:"reason,omitempty"`
	DecidedAt  time.Time `json:"decided_at"`
	// Counts is false once the decision was voided: its approver lost the
	// authority to decide while the request was open (VoidedAt, VoidReason
	// say when and why). A voided decision never counts again.
	Counts     bool       `json:"counts"`
	VoidedAt   *time.Time `json:"voided_at,omitempty"`
	VoidReason VoidReason `json:"void_reason,omitempty"`

	// approver is the approver's authority as the decision was read, and
	// delegator the authority of whom they decided for (nil: themselves).
	approver  authority
	delegator *authority
}

// The decisions an approver can make.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// Approval is an approval request with its decisions. RequiredApprovals
// is how many distinct approvers it needs: what the policy it was raised
// under (Policy; nil for requests older than migration 00012) asked, or
// more once a stricter policy version (RequiredRaisedBy) applied to it.
type Approval struct {
	ID                uuid.UUID       `json:"id"`
	Capability        string          `json:"capability"`
	Status            Status          `json:"status"`
	Input             json.RawMessage `json:"input"`
	InputHash         string          `json:"input_hash"`
	Target            Target          `json:"target"`
	Amount            int64           `json:"amount"`
	Currency          string          `json:"currency"`
	Snapshot          json.RawMessage `json:"snapshot"`
	RequestedBy       UserRef         `json:"requested_by"`
	RequestedVia      capability.Path `json:"requested_via"`
	Reason            string          `json:"reason,omitempty"`
	RequiredApprovals int             `json:"required_approvals"`
	Policy            *PolicyRef      `json:"policy,omitempty"`
	RequiredRaisedBy  *int64          `json:"required_raised_by_version,omitempty"`
	// Windows are the sums the policy's windowed tiers counted for the
	// request (ADR-0022 §3): when it was raised, or when its use found a
	// sum that asks more.
	Windows []WindowSum `json:"windows,omitempty"`
	// Deciders is who may decide the request, from the rule it was raised
	// under; nil: every enabled approver and admin other than the
	// requester. Escalation adds to it once it falls due.
	Deciders   *Audience          `json:"deciders,omitempty"`
	Escalation *RequestEscalation `json:"escalation,omitempty"`
	Approvals  int                `json:"approvals"`
	Decisions  []Decision         `json:"decisions"`
	CreatedAt  time.Time          `json:"created_at"`
	UpdatedAt  time.Time          `json:"updated_at"`
	ExpiresAt  time.Time          `json:"expires_at"`
	DecidedAt  *time.Time         `json:"decided_at,omitempty"`
	ConsumedAt *time.Time         `json:"consumed_at,omitempty"`
	ConsumedBy *uuid.UUID         `json:"consumed_by,omitempty"`
	Version    int64              `json:"version"`

	expiryReported bool
}

// PolicyRef names the policy version and tier a request was raised under,
// and what that tier required (RuleID nil: no tier reached, one approver).
type PolicyRef struct {
	Version           int64      `json:"version"`
	RuleID            *uuid.UUID `json:"rule_id"`
	RequiredApprovals int        `json:"required_approvals"`
}

// Cursor is the request's position in the inbox's keyset order.
func (a *Approval) Cursor() page.Cursor { return page.Cursor{CreatedAt: a.CreatedAt, ID: a.ID} }

// refusal builds the typed problem a gate or decision answers for a.
func refusal(status int, code, detail string, a *Approval) *problem.Error {
	e := problem.New(status, code, detail)
	// target lets a frontend show what waits for approval without a
	// second request (the step loop's data-approval part carries it).
	// approval_status, not status: RFC 9457 reserves status for the HTTP
	// status code.
	e.Extra = map[string]any{"approval_id": a.ID.String(), "approval_status": string(a.Status), "target": a.Target}
	return e
}

// requiredProblem says how far request a is: approvals and
// required_approvals let a frontend show the remaining count.
func requiredProblem(a *Approval) *problem.Error {
	voided := ""
	if n := a.voided(); n > 0 {
		voided = fmt.Sprintf(" (%d decision(s) no longer count: their approver lost the authority to decide)", n)
	}
	e := refusal(http.StatusForbidden, CodeApprovalRequired,
		fmt.Sprintf("%s needs an approval: request %s is %s with %d of %d approvals%s; call again once it is approved",
			a.Capability, a.ID, a.Status, a.Approvals, a.RequiredApprovals, voided), a)
	e.Extra["approvals"], e.Extra["required_approvals"] = a.Approvals, a.RequiredApprovals
	if len(a.Windows) > 0 {
		e.Extra["windows"] = a.Windows
	}
	return e
}
