package approvals

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/money"
)

// Policy holds the approval settings that are configuration rather than
// data: how long requests and approvals live, the clock, and which
// capabilities the gate guards. How many approvers a call needs is data
// (RuleSet), owned by admins. The zero value of a field means its default,
// so a partially filled Policy is valid.
type Policy struct {
	// PendingTTL is how long a request waits for its decisions (default
	// 72 h: a long weekend plus a working day). A request that a stricter
	// policy returns to pending waits this long again.
	PendingTTL time.Duration
	// ApprovedTTL is how long an approval stays usable once decided
	// (default 24 h), so a stale approval cannot be spent weeks later.
	ApprovedTTL time.Duration
	// Capabilities names the consequential capabilities, which never take
	// effect with fewer than one approver; app fills it from the
	// capability registry.
	Capabilities []string
	// Governed names the bound capabilities whose handlers pass every call
	// through the gate (ADR-0022 §1): below every tier they need no
	// approver. Rules may name these and Capabilities. A capability the
	// gate is asked about that is in neither counts as consequential.
	Governed []string
	// Now is the clock (default time.Now); tests set it to move time.
	Now func() time.Time
	// JudgedAlsoBy names, for a call whose effect stands for other
	// capabilities' calls, those capabilities: the call's amount needs
	// the approvers the strictest of their tiers and its own ask
	// (grant-allowance: a budget for issues needs what an issue of its
	// total needs). Nil: each capability is judged by its own tiers.
	JudgedAlsoBy func(capability string, input json.RawMessage) []string
}

// The defaults of DESIGN.md §3 ADR-0010.
const (
	DefaultPendingTTL  = 72 * time.Hour
	DefaultApprovedTTL = 24 * time.Hour
)

// withDefaults fills zero fields.
func (p Policy) withDefaults() Policy {
	if p.PendingTTL <= 0 {
		p.PendingTTL = DefaultPendingTTL
	}
	if p.ApprovedTTL <= 0 {
		p.ApprovedTTL = DefaultApprovedTTL
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// floor is the fewest approvers a call of capName needs: none for a
// governed bound capability below every tier, else one (a capability the
// policy does not know as bound counts as consequential: failing safe).
func (p Policy) floor(capName string) int {
	if slices.Contains(p.Governed, capName) {
		return 0
	}
	return 1
}

// now returns the policy clock's time in UTC at the database's microsecond
// precision, so what is stored compares equal to what was computed.
func (p Policy) now() time.Time { return p.Now().UTC().Truncate(time.Microsecond) }

// AnyCurrency is how the API and the CLI name the currency of a rule that
// applies to every currency without rules of its own.
const AnyCurrency = "*"

// MaxThreshold bounds a rule's threshold: 2^53 − 1, the largest amount an
// invoice holds (ADR-0011 §1), in either unit.
const MaxThreshold = 1<<53 - 1

// Rule is one tier of the approval policy: a call of Capability on an
// amount in Currency at or above the threshold needs Approvers distinct
// approvers.
type Rule struct {
	ID         uuid.UUID `json:"id"`
	Capability string    `json:"capability"`
	// Currency is an ISO 4217 code, or AnyCurrency: then the rule applies
	// to every currency for which Capability has no rule of its own.
	Currency string `json:"currency"`
	// MinAmount is the threshold in minor units of Currency; nil for an
	// AnyCurrency rule.
	MinAmount *int64 `json:"min_amount,omitempty"`
	// MinAmountMajor is the threshold of an AnyCurrency rule, in major
	// units of whichever currency the call is in: a minor unit of one
	// currency is not a minor unit of another.
	MinAmountMajor *int64 `json:"min_amount_major,omitempty"`
	Approvers      int    `json:"approvers"`
	// WindowDays and Scope make a limit over time (ADR-0022 §3): the
	// amount compared with the threshold is the sum of the capability's
	// effects of the same Scope in the last WindowDays days, plus the
	// call's. Both nil: the call's amount alone.
	WindowDays *int   `json:"window_days,omitempty"`
	Scope      *Scope `json:"scope,omitempty"`
	// Deciders is who may decide the calls the rule governs; nil: every
	// approver and admin. Escalation adds to them once a request has
	// waited a while (only with Deciders).
	Deciders   *Audience   `json:"deciders,omitempty"`
	Escalation *Escalation `json:"escalation,omitempty"`
	// FromVersion is the policy version that set the rule; ToVersion the
	// one that replaced or deleted it (nil while in force).
	FromVersion int64  `json:"from_version"`
	ToVersion   *int64 `json:"to_version,omitempty"`
}

// threshold returns the rule's threshold in minor units of currency.
// An AnyCurrency rule on a currency whose exponent is unknown is reached
// by every amount: failing safe costs an approver, failing open money.
func (r *Rule) threshold(currency string) int64 {
	if r.MinAmount != nil {
		return *r.MinAmount
	}
	exp, ok := money.Exponent(currency)
	if !ok {
		return 0
	}
	t := *r.MinAmountMajor
	for range exp {
		if t > math.MaxInt64/10 {
			return math.MaxInt64 // beyond any amount
		}
		t *= 10
	}
	return t
}

// RuleSet is the approval policy at one version: its rules in force.
type RuleSet struct {
	Version   int64     `json:"version"`
	ChangedAt time.Time `json:"changed_at"`
	// ChangedBy is the admin who made this version; nil for the seed.
	ChangedBy *UserRef `json:"changed_by"`
	Rules     []Rule   `json:"rules"`
}

// ResourceVersion is the policy version, sent as the ETag.
func (s *RuleSet) ResourceVersion() int64 { return s.Version }

// Requirement is how many distinct approvers a call needs under a policy
// version, and the tier that says so (nil: no tier reached, the floor).
// Windows are the sums of the windowed tiers evaluated, for the approver
// to read what was counted.
type Requirement struct {
	Version   int64
	Rule      *Rule
	Approvers int
	Windows   []WindowSum
}

// Required returns what a consequential call of capability on amount
// (minor units of currency) needs, its windowed tiers comparing the call's
// amount alone (RequiredOver).
func (s *RuleSet) Required(capability string, amount int64, currency string) Requirement {
	return s.RequiredOver(capability, amount, currency, 1, nil)
}

// tiersFor returns the currency whose tiers apply to a call of capability
// in currency: currency itself if the capability has rules of its own for
// it, else AnyCurrency.
func (s *RuleSet) tiersFor(capability, currency string) string {
	if slices.ContainsFunc(s.Rules, func(r Rule) bool { return r.Capability == capability && r.Currency == currency }) {
		return currency
	}
	return AnyCurrency
}

// RequiredOver returns what a call of capability on amount (minor units
// of currency) needs, at least floor approvers (1 for a consequential
// capability, 0 for a governed bound one). The capability's rules for
// currency apply if it has any, else its AnyCurrency rules. A windowed
// rule compares the sum of windows' entry for its window and scope plus
// the call's amount (the amount alone when windows has none); others the
// amount. Of the tiers reached the one asking most approvers applies, so
// a larger amount never needs fewer whatever order tiers were set in. A
// credit moves as much money as a charge of the same size, so the
// amount's magnitude counts.
func (s *RuleSet) RequiredOver(capability string, amount int64, currency string, floor int, windows []WindowSum) Requirement {
	want := s.tiersFor(capability, currency)
	amount = magnitude(amount)
	req := Requirement{Version: s.Version, Approvers: floor, Windows: windows}
	var reached int64
	for i := range s.Rules {
		r := &s.Rules[i]
		if r.Capability != capability || r.Currency != want {
			continue
		}
		compared := amount
		if w := findWindow(windows, r); w != nil {
			compared = addCapped(w.Sum, amount)
		}
		t := r.threshold(currency)
		if compared < t {
			continue
		}
		// Of equal counts the higher tier is named: it is the one the
		// amount is judged by.
		if r.Approvers > req.Approvers || (r.Approvers == req.Approvers && (req.Rule == nil || t > reached)) {
			req.Rule, req.Approvers, reached = r, r.Approvers, t
		}
	}
	return req
}

// magnitude is |amount|, MaxInt64 for MinInt64.
func magnitude(amount int64) int64 {
	if amount < 0 {
		return -max(amount, -math.MaxInt64)
	}
	return amount
}

// addCapped is a + b for non-negative a and b, MaxInt64 past it.
func addCapped(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
