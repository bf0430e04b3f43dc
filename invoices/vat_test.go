package invoices_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
)

// halfEven is x rounded half to even, for the independent check below.
func halfEven(x *big.Rat) int64 {
	q, r := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	switch new(big.Int).Mul(r.Abs(r), big.NewInt(2)).Cmp(x.Denom()) {
	case 1:
		q.Add(q, big.NewInt(int64(x.Sign())))
	case 0:
		if q.Bit(0) == 1 {
			q.Add(q, big.NewInt(int64(x.Sign())))
		}
	}
	return q.Int64()
}

// requireADR0021 checks lines against ADR-0021 with exact rationals: each
// net is quantity × unit price rounded half-even; per (category, rate) the
// tax is the group's net sum times the rate, rounded half-even once; the
// lines' shares add up to it, each the difference of the rounded
// cumulative shares; the totals are the sums.
func requireADR0021(t *testing.T, in []invoices.LineInput, lines []invoices.Line, sub, tax, total int64) {
	t.Helper()
	type key struct {
		c vat.Category
		r int64
	}
	nets := map[key]int64{}
	var order []key
	var wantSub int64
	for i, l := range in {
		net := halfEven(new(big.Rat).SetFrac(big.NewInt(int64(l.Quantity)*l.UnitAmount), big.NewInt(int64(quantity.One))))
		require.Equal(t, net, lines[i].Amount, "line %d net", i)
		k := key{lines[i].VATCategory, lines[i].TaxRateBPS}
		if _, seen := nets[k]; !seen {
			order = append(order, k)
		}
		nets[k] += net
		wantSub += net
	}
	var wantTax int64
	for _, k := range order {
		groupTax := halfEven(new(big.Rat).SetFrac(big.NewInt(nets[k]*k.r), big.NewInt(10000)))
		wantTax += groupTax
		var cum, prev, shares int64
		for i := range lines {
			if lines[i].VATCategory != k.c || lines[i].TaxRateBPS != k.r {
				continue
			}
			cum += lines[i].Amount
			upTo := int64(0)
			if nets[k] > 0 {
				upTo = halfEven(new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(groupTax), big.NewInt(cum)), big.NewInt(nets[k])))
			}
			require.Equal(t, upTo-prev, lines[i].TaxAmount, "line %d share of group %v", i, k)
			prev = upTo
			shares += lines[i].TaxAmount
		}
		require.Equal(t, groupTax, shares, "the shares of group %v add up to its tax", k)
	}
	require.Equal(t, wantSub, sub)
	require.Equal(t, wantTax, tax)
	require.Equal(t, sub+tax, total)
	var breakdown int64
	for _, g := range invoices.Breakdown(lines) {
		breakdown += g.TaxAmount
	}
	require.Equal(t, tax, breakdown, "the VAT breakdown adds up to the tax total")
}

// ADR-0021: VAT is computed per (category, rate) group, rounded once,
// where rounding per line would differ by a cent or more.
func TestVATPerCategoryAndRate(t *testing.T) {
	t.Parallel()
	q := func(s string) quantity.Quantity {
		v, err := quantity.Parse([]byte(`"` + s + `"`))
		require.NoError(t, err)
		return v
	}
	for _, tc := range []struct {
		name string
		in   []invoices.LineInput
		// tax is the invoice's; perLine what rounding each line on its own
		// would have made, to show the cases differ.
		tax, perLine int64
	}{
		{"ten lines of 0.03 at 19 %", repeat(10, invoices.LineInput{Description: "x", Quantity: quantity.One, UnitAmount: 3, TaxRateBPS: 1900}), 6, 10},
		{"two lines, each half a cent of tax", []invoices.LineInput{
			{Description: "a", Quantity: quantity.One, UnitAmount: 25, TaxRateBPS: 1000},
			{Description: "b", Quantity: quantity.One, UnitAmount: 25, TaxRateBPS: 1000},
		}, 5, 4},
		{"decimal quantities: 7.5 hours and 0.125 kg", []invoices.LineInput{
			{Description: "Work", Quantity: q("7.5"), Unit: "HUR", UnitAmount: 8_333, TaxRateBPS: 1900},
			{Description: "Saffron", Quantity: q("0.125"), Unit: "KGM", UnitAmount: 999_99, TaxRateBPS: 1900},
		}, 14_250, 14_250},
		{"two rates and an exempt line", []invoices.LineInput{
			{Description: "a", Quantity: quantity.One, UnitAmount: 1_05, TaxRateBPS: 700},
			{Description: "b", Quantity: 3 * quantity.One, UnitAmount: 1_05, TaxRateBPS: 1900},
			{Description: "c", Quantity: quantity.One, UnitAmount: 5_00, VATCategory: vat.Exempt},
			{Description: "d", Quantity: quantity.One, UnitAmount: 1_05, TaxRateBPS: 700},
		}, 75, 74},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, sub, tax, total, err := invoices.ComputeLines(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.tax, tax)
			requireADR0021(t, tc.in, lines, sub, tax, total)
			var perLine int64
			for _, l := range lines {
				perLine += halfEven(new(big.Rat).SetFrac(big.NewInt(l.Amount*l.TaxRateBPS), big.NewInt(10000)))
			}
			require.Equal(t, tc.perLine, perLine, "per-line rounding would have made this")
		})
	}
}

// A 1,000-line invoice of random quantities, prices, rates and
// categories is priced by the rule, and pricing its lines again gives the
// same lines.
func TestVATOfAThousandLines(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(39, 21))
	rates := []int64{700, 1900, 2000, 550, 1000}
	in := make([]invoices.LineInput, 1000)
	for i := range in {
		l := invoices.LineInput{Description: fmt.Sprintf("line %d", i),
			Quantity: quantity.Quantity(1 + r.Int64N(20*int64(quantity.One))), UnitAmount: r.Int64N(100_000)}
		switch r.IntN(4) {
		case 0:
			l.VATCategory = vat.ReverseCharge
		case 1:
			l.VATCategory = vat.ZeroRated
		default:
			l.TaxRateBPS = rates[r.IntN(len(rates))]
		}
		in[i] = l
	}
	lines, sub, tax, total, err := invoices.ComputeLines(in)
	require.NoError(t, err)
	requireADR0021(t, in, lines, sub, tax, total)
	again := make([]invoices.LineInput, len(lines))
	for i, l := range lines {
		again[i] = l.Input()
	}
	lines2, sub2, tax2, total2, err := invoices.ComputeLines(again)
	require.NoError(t, err)
	require.Equal(t, lines, lines2)
	require.Equal(t, []int64{sub, tax, total}, []int64{sub2, tax2, total2})
}

func repeat(n int, l invoices.LineInput) []invoices.LineInput {
	out := make([]invoices.LineInput, n)
	for i := range out {
		out[i] = l
	}
	return out
}
