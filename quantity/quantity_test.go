package quantity_test

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"

	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

func TestParseAcceptsDecimalStringsAndWholeNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want quantity.Quantity
		str  string
	}{
		{`"7.5"`, 75000, "7.5"},
		{`"0.125"`, 1250, "0.125"},
		{`"-2"`, -20000, "-2"},
		{`"12"`, 120000, "12"},
		{`7`, 70000, "7"},
		{`-3`, -30000, "-3"},
		{`0`, 0, "0"},
		{`"0"`, 0, "0"},
		{`"-0"`, 0, "0"},
		{`"0.0001"`, 1, "0.0001"},
		{`"-0.0001"`, -1, "-0.0001"},
		{`"7.5000"`, 75000, "7.5"},
		{`"007.50"`, 75000, "7.5"},
		{`"1234567.8901"`, 12345678901, "1234567.8901"},
		{` "7.5" `, 75000, "7.5"},
		{`"\u0037.5"`, 75000, "7.5"},
		{`"922337203685477.5807"`, math.MaxInt64, "922337203685477.5807"},
		{`"-922337203685477.5808"`, math.MinInt64, "-922337203685477.5808"},
		{`922337203685477`, 9223372036854770000, "922337203685477"},
	} {
		q, err := quantity.Parse(json.RawMessage(tc.raw))
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.want, q, tc.raw)
		require.Equal(t, tc.str, q.String(), tc.raw)
		b, err := json.Marshal(q)
		require.NoError(t, err)
		require.Equal(t, `"`+tc.str+`"`, string(b), tc.raw)
	}
}

func TestParseRefusesWhatIsNotAQuantity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want error
	}{
		{``, quantity.ErrEmpty},
		{`   `, quantity.ErrEmpty},
		{`""`, quantity.ErrEmpty},
		{`null`, quantity.ErrType},
		{`true`, quantity.ErrType},
		{`{"value":"7.5"}`, quantity.ErrType},
		{`["7.5"]`, quantity.ErrType},
		{`7.5`, quantity.ErrFloat},
		{`7.0`, quantity.ErrFloat},
		{`7e2`, quantity.ErrFloat},
		{`1E-3`, quantity.ErrFloat},
		{`"7.12345"`, quantity.ErrDecimals},
		{`"7.50000"`, quantity.ErrDecimals},
		{`"0.00001"`, quantity.ErrDecimals},
		{`"7e2"`, quantity.ErrSyntax},
		{`"7,5"`, quantity.ErrSyntax},
		{`"1,000"`, quantity.ErrSyntax},
		{`"1 000"`, quantity.ErrSyntax},
		{`" 7.5"`, quantity.ErrSyntax},
		{`"7.5 "`, quantity.ErrSyntax},
		{`"+7.5"`, quantity.ErrSyntax},
		{`"--7"`, quantity.ErrSyntax},
		{`"-"`, quantity.ErrSyntax},
		{`"."`, quantity.ErrSyntax},
		{`".5"`, quantity.ErrSyntax},
		{`"5."`, quantity.ErrSyntax},
		{`"1.2.3"`, quantity.ErrSyntax},
		{`"NaN"`, quantity.ErrSyntax},
		{`"Infinity"`, quantity.ErrSyntax},
		{`"0x10"`, quantity.ErrSyntax},
		{`"٧"`, quantity.ErrSyntax}, // ARABIC-INDIC DIGIT SEVEN
		{`"7.5`, quantity.ErrSyntax},
		{`07`, quantity.ErrSyntax},
		{`-`, quantity.ErrSyntax},
		{`7 8`, quantity.ErrSyntax},
		{`"922337203685477.5808"`, quantity.ErrRange},
		{`"-922337203685477.5809"`, quantity.ErrRange},
		{`922337203685478`, quantity.ErrRange},
		{`"99999999999999999999999"`, quantity.ErrRange},
	} {
		_, err := quantity.Parse(json.RawMessage(tc.raw))
		require.ErrorIs(t, err, tc.want, "%q", tc.raw)
	}
}

func TestTheRefusalsSayWhatToSend(t *testing.T) {
	t.Parallel()
	_, err := quantity.Parse(json.RawMessage(`7.5`))
	require.EqualError(t, err, `must be sent as a decimal string such as "7.5": a JSON number with a fraction or an exponent is read as a binary float by most clients, which cannot hold every decimal exactly`)
	_, err = quantity.Parse(json.RawMessage(`"7.12345"`))
	require.EqualError(t, err, "must have at most 4 decimals")
}

func TestUnmarshalJSONReadsWhatMarshalJSONWrites(t *testing.T) {
	t.Parallel()
	type line struct {
		Quantity quantity.Quantity `json:"quantity"`
	}
	var l line
	require.NoError(t, json.Unmarshal([]byte(`{"quantity":"0.125"}`), &l))
	require.Equal(t, quantity.Quantity(1250), l.Quantity)
	b, err := json.Marshal(l)
	require.NoError(t, err)
	require.JSONEq(t, `{"quantity":"0.125"}`, string(b))

	require.ErrorIs(t, json.Unmarshal([]byte(`{"quantity":7.5}`), &l), quantity.ErrFloat)
	require.ErrorIs(t, json.Unmarshal([]byte(`{"quantity":null}`), &l), quantity.ErrType)
}

func TestWhole(t *testing.T) {
	t.Parallel()
	q, err := quantity.Whole(7)
	require.NoError(t, err)
	require.Equal(t, "7", q.String())
	require.Equal(t, quantity.One, mustWhole(t, 1))
	q, err = quantity.Whole(-922337203685477)
	require.NoError(t, err)
	require.Equal(t, "-922337203685477", q.String())
	_, err = quantity.Whole(922337203685478)
	require.ErrorIs(t, err, quantity.ErrRange)
	_, err = quantity.Whole(math.MinInt64)
	require.ErrorIs(t, err, quantity.ErrRange)
}

func mustWhole(t *testing.T, n int64) quantity.Quantity {
	t.Helper()
	q, err := quantity.Whole(n)
	require.NoError(t, err)
	return q
}

func mustParse(t *testing.T, s string) quantity.Quantity {
	t.Helper()
	q, err := quantity.Parse(json.RawMessage(`"` + s + `"`))
	require.NoError(t, err, s)
	return q
}

func TestTimesRoundsHalfEvenInMinorUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q    string
		unit int64
		want int64
	}{
		{"7.5", 12000, 90000},   // 7.5 h × 120.00 = 900.00
		{"7.5", 1999, 14992},    // 14992.5 → even 14992
		{"2.5", 1, 2},           // 2.5 → 2
		{"3.5", 1, 4},           // 3.5 → 4
		{"0.125", 1, 0},         // 0.125 → 0
		{"0.5", 1, 0},           // 0.5 → 0
		{"1.5", 1, 2},           // 1.5 → 2
		{"0.0001", 5000, 0},     // 0.5 → 0
		{"0.0001", 15000, 2},    // 1.5 → 2
		{"0.0001", 5001, 1},     // 0.5001 → 1
		{"-7.5", 1999, -14992},  // symmetric: -14992.5 → -14992
		{"-3.5", 1, -4},         // -3.5 → -4
		{"7.5", -1999, -14992},  // a negative unit amount
		{"-7.5", -1999, 14992},  // two negatives
		{"0.333", 100, 33},      // 33.3 → 33
		{"0.335", 100, 34},      // 33.5 → 34
		{"0.345", 100, 34},      // 34.5 → 34
		{"12", 4072, 48864},     // JPY 4,072 × 12
		{"0", math.MaxInt64, 0}, // zero quantity
		{"1", math.MaxInt64, math.MaxInt64},
		{"1", math.MinInt64, math.MinInt64},
		{"-1", math.MaxInt64, -math.MaxInt64},
		{"0.5", math.MinInt64, math.MinInt64 / 2},
		{"922337203685477.5807", 1, 922337203685478}, // .5807 rounds up
		{"922337203685477.5807", -1, -922337203685478},
	} {
		got, err := mustParse(t, tc.q).Times(tc.unit)
		require.NoError(t, err, "%s × %d", tc.q, tc.unit)
		require.Equal(t, tc.want, got, "%s × %d", tc.q, tc.unit)
	}
}

func TestTimesRefusesAnAmountBeyondInt64(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q    string
		unit int64
	}{
		{"1.0001", math.MaxInt64},
		{"2", math.MaxInt64/2 + 1},
		{"-1", math.MinInt64},
		{"922337203685477.5807", math.MaxInt64},
		{"-922337203685477.5808", math.MinInt64},
		{"10000", math.MaxInt64 / 9999},
	} {
		_, err := mustParse(t, tc.q).Times(tc.unit)
		require.ErrorIs(t, err, quantity.ErrOverflow, "%s × %d", tc.q, tc.unit)
	}
}

func TestFormatIsTheLanguages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q          string
		en, de, fr string
	}{
		{"7.5", "7.5", "7,5", "7,5"},
		{"0.125", "0.125", "0,125", "0,125"},
		{"0.05", "0.05", "0,05", "0,05"},
		{"12", "12", "12", "12"},
		{"-2", "-2", "-2", "-2"},
		{"-0.5", "-0.5", "-0,5", "-0,5"},
		{"1234.5", "1,234.5", "1.234,5", "1\u00a0234,5"},
		{"1234567.8901", "1,234,567.8901", "1.234.567,8901", "1\u00a0234\u00a0567,8901"},
		{"-922337203685477.5808", "-922,337,203,685,477.5808", "-922.337.203.685.477,5808", "-922\u00a0337\u00a0203\u00a0685\u00a0477,5808"},
	} {
		q := mustParse(t, tc.q)
		require.Equal(t, tc.en, q.Format("en"), tc.q)
		require.Equal(t, tc.de, q.Format("de"), tc.q)
		require.Equal(t, tc.fr, q.Format("fr"), tc.q)
	}
	// A tag x/text cannot parse is formatted as English.
	require.Equal(t, "1,234.5", mustParse(t, "1234.5").Format("not a tag!"))
}

func TestPluralFollowsCLDR(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q          string
		en, de, fr bool
	}{
		{"1", false, false, false},
		{"-1", false, false, false},
		{"0", true, true, false},
		{"0.5", true, true, false},
		{"1.5", true, true, false},
		{"2", true, true, true},
		{"7.5", true, true, true},
		{"1.0001", true, true, false},
	} {
		q := mustParse(t, tc.q)
		require.Equal(t, tc.en, q.Plural("en"), "en %s", tc.q)
		require.Equal(t, tc.de, q.Plural("de"), "de %s", tc.q)
		require.Equal(t, tc.fr, q.Plural("fr"), "fr %s", tc.q)
	}
}

// FuzzParse: whatever Parse accepts, it reads exactly (as math/big reads
// the same decimal), and its JSON reads back to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`"7.5"`, `"0.125"`, `"-2"`, `12`, `7.5`, `"1e3"`, `"-0.0001"`, `"922337203685477.5807"`, `null`, `""`, `"00.10"`} {
		f.Add([]byte(s))
	}
	ten4 := big.NewRat(10000, 1)
	f.Fuzz(func(t *testing.T, raw []byte) {
		q, err := quantity.Parse(raw)
		if err != nil {
			return
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			require.NoError(t, json.Unmarshal(raw, new(json.Number)))
			s = string(json.RawMessage(raw))
		}
		r, ok := new(big.Rat).SetString(string(trimJSON(s)))
		require.True(t, ok, "big reads %q", s)
		r.Mul(r, ten4)
		require.True(t, r.IsInt(), "%q has at most 4 decimals", s)
		require.Equal(t, r.Num().String(), big.NewInt(int64(q)).String(), "%q", s)

		b, err := json.Marshal(q)
		require.NoError(t, err)
		back, err := quantity.Parse(b)
		require.NoError(t, err, "%s", b)
		require.Equal(t, q, back, "%s", b)
		require.Equal(t, `"`+q.String()+`"`, string(b))
	})
}

// trimJSON drops the JSON whitespace Parse ignores around a number.
func trimJSON(s string) []byte {
	b := []byte(s)
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// FuzzTimes: Times agrees with exact rational arithmetic rounded half-even.
func FuzzTimes(f *testing.F) {
	f.Add(int64(75000), int64(1999))
	f.Add(int64(math.MinInt64), int64(-1))
	f.Add(int64(5000), int64(1))
	f.Fuzz(func(t *testing.T, q, unit int64) {
		got, err := quantity.Quantity(q).Times(unit)
		exact := new(big.Int).Mul(big.NewInt(q), big.NewInt(unit))
		quo, rem := new(big.Int).QuoRem(exact, big.NewInt(10000), new(big.Int))
		// Half-even on the magnitude: compare 2|rem| with the divisor.
		twice := new(big.Int).Abs(rem)
		twice.Lsh(twice, 1)
		if c := twice.Cmp(big.NewInt(10000)); c > 0 || c == 0 && quo.Bit(0) == 1 {
			quo.Add(quo, big.NewInt(int64(exact.Sign())))
		}
		if !quo.IsInt64() {
			require.ErrorIs(t, err, quantity.ErrOverflow)
			return
		}
		require.NoError(t, err)
		require.Equal(t, quo.Int64(), got)
	})
}
