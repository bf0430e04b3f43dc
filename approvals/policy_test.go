package approvals_test

import (
	"math"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/stretchr/testify/require"
)

func minor(v int64) *int64 { return &v }

func tier(capName, currency string, minAmount, minMajor *int64, approvers int) approvals.Rule {
	return approvals.Rule{ID: uuid.Must(uuid.NewV7()), Capability: capName, Currency: currency,
		MinAmount: minAmount, MinAmountMajor: minMajor, Approvers: approvers, FromVersion: 1}
}

// The seed of migration 00012 is the policy before it was data: issuing at
// or above 10,000 major units of the invoice's currency needs two
// approvers, a credit as much as a charge, an unknown currency the quorum,
// deleting one approver. Migration 00030 gives issuing a credit note the
// same tier; migration 00052 payments one approver from the same amount.
func TestSeededPolicyIsTheQuorumOfBefore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	set, err := b.svc.PolicyGet(b.ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, set.Version)
	require.Nil(t, set.ChangedBy, "the migration made version 1")
	require.Len(t, set.Rules, 4)
	for _, c := range []string{"record-payment", "mark-invoice-paid"} {
		require.Equal(t, 1, ruleFor(t, set, c, approvals.AnyCurrency, 10_000).Approvers, c)
	}
	seed := ruleFor(t, set, "issue-invoice", approvals.AnyCurrency, 10_000)
	require.Nil(t, seed.MinAmount)
	require.EqualValues(t, 10_000, *seed.MinAmountMajor)
	credit := ruleFor(t, set, "issue-credit-note", approvals.AnyCurrency, 10_000)
	require.Equal(t, seed.Approvers, credit.Approvers)
	for _, tc := range []struct {
		capName  string
		amount   int64
		currency string
		want     int
	}{
		{"issue-invoice", 999_999, "EUR", 1},
		{"issue-invoice", 1_000_000, "EUR", 2},
		{"issue-invoice", -1_000_000, "EUR", 2},
		{"issue-invoice", 9_999, "JPY", 1},
		{"issue-invoice", 10_000, "JPY", 2},
		{"issue-invoice", 9_999_999, "BHD", 1},
		{"issue-invoice", 10_000_000, "BHD", 2},
		{"issue-invoice", 1, "XXX", 2},
		{"delete-invoice", 1 << 60, "EUR", 1},
		{"issue-credit-note", 999_999, "EUR", 1},
		{"issue-credit-note", 1_000_000, "EUR", 2},
		{"issue-credit-note", 10_000, "JPY", 2},
	} {
		require.Equal(t, tc.want, set.Required(tc.capName, tc.amount, tc.currency).Approvers, "%+v", tc)
	}
	// What INVOICED_APPROVAL_QUORUM=3 with a threshold of 50 said, as a rule.
	custom := approvals.RuleSet{Version: 2, Rules: []approvals.Rule{tier("issue-invoice", "*", nil, minor(50), 3)}}
	require.Equal(t, 3, custom.Required("issue-invoice", 5_000, "USD").Approvers)
	require.Equal(t, 1, custom.Required("issue-invoice", 4_999, "USD").Approvers)
}

// Per-currency tiers beside the seed: ¥1,000,000 and €10,000 each by its
// own rule, more tiers for euros, every other currency by the seed.
func TestRequiredPerCurrencyTiers(t *testing.T) {
	t.Parallel()
	seed := tier("issue-invoice", "*", nil, minor(10_000), 2)
	jpy := tier("issue-invoice", "JPY", minor(1_000_000), nil, 2)
	eur2 := tier("issue-invoice", "EUR", minor(1_000_000), nil, 2)
	eur3 := tier("issue-invoice", "EUR", minor(10_000_000), nil, 3)
	// Set in an order that is not the tiers': the count never falls as
	// the amount grows.
	eur1 := tier("issue-invoice", "EUR", minor(0), nil, 1)
	odd := tier("delete-invoice", "EUR", minor(100), nil, 3)
	oddHigher := tier("delete-invoice", "EUR", minor(1_000), nil, 2)
	set := approvals.RuleSet{Version: 7, Rules: []approvals.Rule{eur3, seed, jpy, eur2, eur1, odd, oddHigher}}
	for _, tc := range []struct {
		capName  string
		amount   int64
		currency string
		want     int
		rule     *approvals.Rule
	}{
		// ¥10,000 (about €60) needed two under the seed; the yen's own
		// rule replaces it.
		{"issue-invoice", 10_000, "JPY", 1, nil},
		{"issue-invoice", 999_999, "JPY", 1, nil},
		{"issue-invoice", 1_000_000, "JPY", 2, &jpy},
		{"issue-invoice", 999_999, "EUR", 1, &eur1},
		{"issue-invoice", 1_000_000, "EUR", 2, &eur2},
		{"issue-invoice", 9_999_999, "EUR", 2, &eur2},
		{"issue-invoice", 10_000_000, "EUR", 3, &eur3},
		{"issue-invoice", -10_000_000, "EUR", 3, &eur3},
		{"issue-invoice", math.MinInt64, "EUR", 3, &eur3},
		{"issue-invoice", math.MaxInt64, "EUR", 3, &eur3},
		{"issue-invoice", 999_999, "USD", 1, nil},
		{"issue-invoice", 1_000_000, "USD", 2, &seed},
		{"issue-invoice", 9_999_999, "BHD", 1, nil},
		{"issue-invoice", 10_000_000, "BHD", 2, &seed},
		{"issue-invoice", 1, "XXX", 2, &seed},
		{"delete-invoice", 99, "EUR", 1, nil},
		{"delete-invoice", 100, "EUR", 3, &odd},
		{"delete-invoice", 5_000, "EUR", 3, &odd},
		{"delete-invoice", 1 << 60, "USD", 1, nil},
	} {
		req := set.Required(tc.capName, tc.amount, tc.currency)
		require.Equal(t, tc.want, req.Approvers, "%+v", tc)
		require.EqualValues(t, 7, req.Version)
		if tc.rule == nil {
			require.Nil(t, req.Rule, "%+v", tc)
		} else {
			require.NotNil(t, req.Rule, "%+v", tc)
			require.Equal(t, tc.rule.ID, req.Rule.ID, "%+v", tc)
		}
	}
	// A threshold in major units beyond int64 once scaled is never reached.
	huge := approvals.RuleSet{Rules: []approvals.Rule{tier("issue-invoice", "*", nil, minor(approvals.MaxThreshold), 2)}}
	require.Equal(t, 1, huge.Required("issue-invoice", math.MaxInt64-1, "CLF").Approvers)
	require.Equal(t, 2, huge.Required("issue-invoice", approvals.MaxThreshold, "JPY").Approvers)
}
