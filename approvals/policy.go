package approvals

import (
	"slices"
	"time"

	"github.com/invoiced/invoiced/money"
)

// Policy says how many approvals a request needs and how long requests and
// approvals live. The zero value of a field means its default, so a
// partially filled Policy is valid.
type Policy struct {
	// PendingTTL is how long a request waits for its decisions (default
	// 72 h: a long weekend plus a working day).
	PendingTTL time.Duration
	// ApprovedTTL is how long an approval stays usable once decided
	// (default 24 h), so a stale approval cannot be spent weeks later.
	ApprovedTTL time.Duration
	// QuorumThreshold is the amount, in major units of the target's
	// currency, at or above which QuorumCapabilities need Quorum distinct
	// approvers (default 10,000).
	QuorumThreshold int64
	// Quorum is the number of distinct approvers above the threshold
	// (default 2).
	Quorum int
	// QuorumCapabilities are the capabilities the quorum applies to
	// (default issue-invoice: deleting a draft moves no money).
	QuorumCapabilities []string
	// Now is the clock (default time.Now); tests set it to move time.
	Now func() time.Time
}

// The defaults of DESIGN.md §3 ADR-0010.
const (
	DefaultPendingTTL      = 72 * time.Hour
	DefaultApprovedTTL     = 24 * time.Hour
	DefaultQuorumThreshold = 10_000
	DefaultQuorum          = 2
)

// withDefaults fills zero fields.
func (p Policy) withDefaults() Policy {
	if p.PendingTTL <= 0 {
		p.PendingTTL = DefaultPendingTTL
	}
	if p.ApprovedTTL <= 0 {
		p.ApprovedTTL = DefaultApprovedTTL
	}
	if p.QuorumThreshold <= 0 {
		p.QuorumThreshold = DefaultQuorumThreshold
	}
	if p.Quorum <= 0 {
		p.Quorum = DefaultQuorum
	}
	if p.QuorumCapabilities == nil {
		p.QuorumCapabilities = []string{"issue-invoice"}
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// now returns the policy clock's time in UTC at the database's microsecond
// precision, so what is stored compares equal to what was computed.
func (p Policy) now() time.Time { return p.Now().UTC().Truncate(time.Microsecond) }

// Required returns how many distinct approvers a call of capability on an
// amount (minor units of currency) needs. An unknown currency needs the
// quorum: failing safe costs one more approver, failing open costs money.
func (p Policy) Required(capability string, amount int64, currency string) int {
	p = p.withDefaults()
	if !slices.Contains(p.QuorumCapabilities, capability) {
		return 1
	}
	exp, ok := money.Exponent(currency)
	if !ok {
		return p.Quorum
	}
	threshold := p.QuorumThreshold
	for range exp {
		if threshold > (1<<63-1)/10 {
			return 1 // a threshold beyond int64 is never reached
		}
		threshold *= 10
	}
	// A credit of the same size moves as much money as a charge.
	if amount < 0 {
		if amount == -1<<63 {
			return p.Quorum
		}
		amount = -amount
	}
	if amount >= threshold {
		return p.Quorum
	}
	return 1
}
