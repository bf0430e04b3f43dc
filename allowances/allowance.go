// Package allowances holds standing allowances (docs/approvals.md,
// "Standing allowances"): a budget of calls of one kind (issue, credit,
// void, payments), in one currency, for some customers or all, until a
// time, that one approved grant-allowance call puts in force. The
// approval gate draws it in the effect's own transaction, under the
// allowance's row lock, for each call in its scope that would otherwise
// ask for an approval; a call outside its scope or over its caps asks as
// before. Approvers and admins revoke an allowance with immediate effect.
package allowances

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
)

// Kind is what calls an allowance covers.
type Kind string

// The kinds, each naming the capabilities it covers (covers).
const (
	KindIssue    Kind = "issue"
	KindCredit   Kind = "credit"
	KindVoid     Kind = "void"
	KindPayments Kind = "payments"
)

// Capability names this package governs or drew for; the invoicing names
// are invoices' (not imported: invoices does not need allowances, and
// app wires both).
const (
	CapGrant  = "grant-allowance"
	CapList   = "list-allowances"
	CapGet    = "get-allowance"
	capIssue  = "issue-invoice"
	capCredit = "issue-credit-note"
	capVoid   = "void-invoice"
	capPaid   = "mark-invoice-paid"
	capPay    = "record-payment"
)

// covers maps each capability an allowance can stand in for to its kind,
// and what a result says it did.
var covers = map[string]struct {
	kind Kind
	verb string
}{
	capIssue:  {KindIssue, "issued"},
	capCredit: {KindCredit, "credited"},
	capVoid:   {KindVoid, "voided"},
	capPaid:   {KindPayments, "paid"},
	capPay:    {KindPayments, "recorded"},
}

// Capabilities returns the capabilities of kind k.
func (k Kind) Capabilities() []string {
	var out []string
	for _, name := range []string{capIssue, capCredit, capVoid, capPaid, capPay} {
		if covers[name].kind == k {
			out = append(out, name)
		}
	}
	return out
}

// Status is where an allowance is. Only revoked is stored; the others
// follow from the clock and what is left.
type Status string

// The statuses.
const (
	StatusActive    Status = "active"
	StatusExhausted Status = "exhausted"
	StatusExpired   Status = "expired"
	StatusRevoked   Status = "revoked"
)

// Stable problem codes of this package.
const (
	CodeNotActive = "ALLOWANCE_NOT_ACTIVE"
	CodeExists    = "ALLOWANCE_EXISTS"
)

// UserRef names a user in a response.
type UserRef struct {
	ID       uuid.UUID `json:"id"`
	Username string    `json:"username"`
}

// Allowance is a standing allowance with what is left of it.
type Allowance struct {
	ID   uuid.UUID `json:"id"`
	Kind Kind      `json:"capability"`
	// Capabilities are the capabilities it covers.
	Capabilities []string `json:"capabilities"`
	// CustomerIDs is nil for every customer.
	CustomerIDs    []uuid.UUID `json:"customer_ids"`
	Currency       string      `json:"currency"`
	MaxTotal       int64       `json:"max_total"`
	MaxCount       int         `json:"max_count"`
	RemainingTotal int64       `json:"remaining_total"`
	RemainingCount int         `json:"remaining_count"`
	ValidUntil     time.Time   `json:"valid_until"`
	Reason         string      `json:"reason"`
	Status         Status      `json:"status"`
	RequestedBy    UserRef     `json:"requested_by"`
	ApprovalID     uuid.UUID   `json:"approval_id"`
	// Deciders approved its grant; they never draw it.
	Deciders     []uuid.UUID `json:"deciders"`
	CreatedAt    time.Time   `json:"created_at"`
	RevokedAt    *time.Time  `json:"revoked_at"`
	RevokedBy    *UserRef    `json:"revoked_by"`
	RevokeReason string      `json:"revoke_reason,omitempty"`
	Version      int64       `json:"version"`

	revoked bool
}

// ResourceVersion is the allowance's version, sent as the ETag.
func (a *Allowance) ResourceVersion() int64 { return a.Version }

// Cursor is the allowance's position in the list's keyset order.
func (a *Allowance) Cursor() page.Cursor { return page.Cursor{CreatedAt: a.CreatedAt, ID: a.ID} }

func (a *Allowance) locationID() string { return a.ID.String() }

// statusAt is the allowance's status at now.
func (a *Allowance) statusAt(now time.Time) Status {
	switch {
	case a.revoked:
		return StatusRevoked
	case !now.Before(a.ValidUntil):
		return StatusExpired
	case a.RemainingCount == 0 || a.RemainingTotal == 0:
		return StatusExhausted
	}
	return StatusActive
}

// note is what a drawing call's result says: "issued under allowance A,
// 7 calls and 1,200.00 EUR left".
func note(verb string, d *capability.AllowanceDraw) string {
	return fmt.Sprintf("%s under allowance %s, %d call(s) and %s left", verb, d.ID, d.RemainingCount, money.Display(d.RemainingTotal, d.Currency))
}
