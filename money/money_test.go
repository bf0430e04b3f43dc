package money_test

import (
	"math"
	"net/http"
	"strings"
	"sync"
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

// displayCases are amounts as people read them.
var displayCases = []struct {
	amount int64
	code   string
	want   string
}{
	{1623750, "USD", "16,237.50 USD"},
	{4072, "JPY", "4,072 JPY"},
	{2110, "BHD", "2.110 BHD"},
	{123450, "EUR", "1,234.50 EUR"},
	{0, "EUR", "0.00 EUR"}, {5, "EUR", "0.05 EUR"}, {-5, "EUR", "-0.05 EUR"},
	{-123456789, "EUR", "-1,234,567.89 EUR"},
	{99999, "EUR", "999.99 EUR"}, {100000, "EUR", "1,000.00 EUR"},
	{999, "JPY", "999 JPY"}, {1000, "JPY", "1,000 JPY"}, {-1000, "JPY", "-1,000 JPY"},
	{7, "BHD", "0.007 BHD"}, {1234567, "KWD", "1,234.567 KWD"},
	{0, "CLF", "0.0000 CLF"}, {12345, "CLF", "1.2345 CLF"},
	// Our ISO 4217 table, not CLDR's: IDR and IQD carry 2 and 3 digits.
	{150000, "IDR", "1,500.00 IDR"}, {1500, "IQD", "1.500 IQD"},
	// Indian grouping is a locale's, not a currency's: one style everywhere.
	{12345678901, "INR", "123,456,789.01 INR"},
	// Beyond 2^53: exact, where a float64 would print …09.92.
	{9007199254740993, "USD", "90,071,992,547,409.93 USD"},
	{math.MaxInt64, "USD", "92,233,720,368,547,758.07 USD"},
	{math.MinInt64, "USD", "-92,233,720,368,547,758.08 USD"},
	{math.MaxInt64, "JPY", "9,223,372,036,854,775,807 JPY"},
	{math.MinInt64, "JPY", "-9,223,372,036,854,775,808 JPY"},
	{math.MinInt64, "CLF", "-922,337,203,685,477.5808 CLF"},
	// Validation refuses unknown codes; shown anyway, as minor units.
	{1234, "XXX", "1,234 XXX"},
}

func TestDisplay(t *testing.T) {
	t.Parallel()
	for _, tc := range displayCases {
		require.Equal(t, tc.want, money.Display(tc.amount, tc.code), "%d %s", tc.amount, tc.code)
	}
}

func TestGroupedIsDisplayWithoutTheCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		amount int64
		code   string
		want   string
	}{
		{1623750, "USD", "16,237.50"}, {4072, "JPY", "4,072"}, {2110, "BHD", "2.110"},
		{-5, "EUR", "-0.05"}, {math.MinInt64, "EUR", "-92,233,720,368,547,758.08"},
	} {
		require.Equal(t, tc.want, money.Grouped(tc.amount, tc.code))
		require.Equal(t, tc.want+" "+tc.code, money.Display(tc.amount, tc.code))
	}
}

// Every code of the table shows as many digits after the point as its
// exponent, and none for exponent 0.
func TestDisplayDigitsFollowTheExponentOfEveryCode(t *testing.T) {
	t.Parallel()
	for _, code := range money.Codes() {
		exp, _ := money.Exponent(code)
		s := money.Grouped(1, code)
		if exp == 0 {
			require.Equal(t, "1", s, code)
			continue
		}
		require.Equal(t, "0."+strings.Repeat("0", exp-1)+"1", s, code)
	}
}

// Pages and documents format amounts for many requests at once.
func TestDisplayConcurrently(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				for _, tc := range displayCases {
					if got := money.Display(tc.amount, tc.code); got != tc.want {
						t.Errorf("%d %s: %q, want %q", tc.amount, tc.code, got, tc.want)
					}
				}
			}
		})
	}
	wg.Wait()
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
