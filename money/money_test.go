package money_test

import (
	"math"
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

func TestExponent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code string
		exp  int
		ok   bool
	}{
		{"JPY", 0, true}, {"EUR", 2, true}, {"USD", 2, true}, {"BHD", 3, true}, {"KWD", 3, true},
		{"CLF", 4, true}, {"XXX", 0, false}, {"eur", 0, false}, {"", 0, false},
	} {
		exp, ok := money.Exponent(tc.code)
		require.Equal(t, tc.ok, ok, tc.code)
		require.Equal(t, tc.exp, exp, tc.code)
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		amount int64
		code   string
		want   string
	}{
		{123450, "EUR", "1234.50"}, {5, "EUR", "0.05"}, {-5, "EUR", "-0.05"},
		{1234, "JPY", "1234"}, {1234, "BHD", "1.234"}, {7, "BHD", "0.007"},
		{math.MinInt64, "EUR", "-92233720368547758.08"},
	} {
		require.Equal(t, tc.want, money.Format(tc.amount, tc.code))
	}
}

func TestTaxHalfEven(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		amount, bps, want int64
	}{
		{1000, 2000, 200}, // exact
		{25, 1000, 2},     // 2.5 → 2 (even)
		{35, 1000, 4},     // 3.5 → 4 (even)
		{26, 1000, 3},     // 2.6 → 3
		{24, 1000, 2},     // 2.4 → 2
		{1, 5000, 0},      // 0.5 → 0
		{3, 5000, 2},      // 1.5 → 2
		{0, 2000, 0},
		{999, 0, 0},
		{12345, 10000, 12345}, // 100 %
		{math.MaxInt64, 10000, math.MaxInt64},
		{math.MaxInt64, 5000, 4611686018427387904}, // (2^63-1)/2 = …903.5 → …904 (even)
	} {
		got, err := money.Tax(tc.amount, tc.bps, "f")
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%d × %d bps", tc.amount, tc.bps)
	}
	for _, bad := range [][2]int64{{-1, 100}, {100, -1}, {100, 10001}} {
		_, err := money.Tax(bad[0], bad[1], "lines.0.tax_rate_bps")
		pe, ok := problem.As(err)
		require.True(t, ok)
		require.Equal(t, http.StatusUnprocessableEntity, pe.Status)
		require.Equal(t, "lines.0.tax_rate_bps", pe.Errors[0].Field)
	}
}

func requireOverflow(t *testing.T, err error, field string) {
	t.Helper()
	pe, ok := problem.As(err)
	require.True(t, ok, "want a problem, got %v", err)
	require.Equal(t, http.StatusUnprocessableEntity, pe.Status)
	require.Equal(t, money.CodeAmountOverflow, pe.Code)
	require.Equal(t, field, pe.Errors[0].Field)
}

func TestCheckedArithmetic(t *testing.T) {
	t.Parallel()
	s, err := money.Add(math.MaxInt64-1, 1, "total")
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), s)
	_, err = money.Add(math.MaxInt64, 1, "total")
	requireOverflow(t, err, "total")
	_, err = money.Add(math.MinInt64, -1, "total")
	requireOverflow(t, err, "total")
	s, err = money.Add(math.MaxInt64, math.MinInt64, "total")
	require.NoError(t, err)
	require.Equal(t, int64(-1), s)

	p, err := money.Mul(3037000499, 3037000499, "x") // just under 2^63
	require.NoError(t, err)
	require.Equal(t, int64(9223372030926249001), p)
	_, err = money.Mul(3037000500, 3037000500, "lines.0.unit_amount")
	requireOverflow(t, err, "lines.0.unit_amount")
	_, err = money.Mul(-1, math.MinInt64, "x")
	requireOverflow(t, err, "x")
	_, err = money.Mul(math.MaxInt64, 2, "x")
	requireOverflow(t, err, "x")
	p, err = money.Mul(0, math.MaxInt64, "x")
	require.NoError(t, err)
	require.Zero(t, p)
}
