package jsondoc

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The exact decimal comparison agrees with math/big wherever math/big
// can afford it.
func FuzzDecimalAgreesWithBigRat(f *testing.F) {
	for _, s := range []string{"0", "-0.0", "3", "3.00000000000000000001", "0.1", "1e21", "1E+21", "1e-7", "9007199254740991",
		"9007199254740991.5", "9007199254740992", "-9007199254740991.0000001", "1000000000000000", "5e-324", "1.7976931348623157e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n string) {
		var num json.Number
		if json.Unmarshal([]byte(n), &num) != nil || strings.Trim(n, " \t\r\n") != n {
			return
		}
		if _, e, _ := strings.Cut(strings.ToLower(n), "e"); len(e) > 3 {
			return // math/big would take too long; that is the point
		}
		fl, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return
		}
		exact, _ := new(big.Rat).SetString(n)
		hashed, _ := new(big.Rat).SetString(strconv.FormatFloat(fl, 'g', -1, 64))
		if got, want := inexact(n, fl), exact.Cmp(hashed) != 0; got != want {
			t.Fatalf("inexact(%s) = %v, math/big says %v", n, got, want)
		}
		limit := new(big.Rat).SetInt64(1<<53 - 1)
		if got, want := unsafeInteger(n, fl), new(big.Rat).Abs(exact).Cmp(limit) > 0; got != want {
			t.Fatalf("unsafeInteger(%s) = %v, math/big says %v", n, got, want)
		}
	})
}

// A number whose exponent math/big would spend minutes on is judged
// without building it: 1e-99999999 is no double's value, and zero is zero
// whatever its exponent.
func TestDecimalOfAHugeExponent(t *testing.T) {
	t.Parallel()
	for n, want := range map[string]bool{"1e-99999999": true, "1e-99999999999999999999": true, "0e99999999999999999999": false, "-0.0e-99999999": false} {
		doc, err := Parse([]byte(n))
		require.NoError(t, err)
		_, got := doc.First(Inexact)
		require.Equal(t, want, got, n)
	}
}
