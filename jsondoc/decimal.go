package jsondoc

import (
	"math"
	"strconv"
	"strings"
)

// decimal is a JSON number's exact value, sign × digits × 10^exp, with
// digits free of leading and trailing zeros ("" is zero). Comparing two
// of them is exact at a cost linear in their length, where math/big would
// build 10^99999999 for "1e-99999999".
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExp bounds the exponents parseDecimal takes: a double's decimal
// exponent stays within ±400, and a bound this far from int64's limits
// keeps the exponent arithmetic from overflowing.
const maxExp = 1 << 40

// parseDecimal reads n, a number in JSON syntax (as encoding/json checked
// it, or as strconv.FormatFloat writes one). ok is false when its exponent
// is beyond maxExp, when only its being zero or not is known.
func parseDecimal(n string) (d decimal, ok bool) {
	d.neg = strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	mant, expText, hasExp := strings.Cut(strings.ToLower(n), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	d.digits = trimmed
	if trimmed == "" {
		return decimal{}, true
	}
	if hasExp {
		e, err := strconv.ParseInt(strings.TrimPrefix(expText, "+"), 10, 64)
		if err != nil || e > maxExp || e < -maxExp {
			return d, false
		}
		d.exp = e
	}
	d.exp += int64(len(digits)-len(trimmed)) - int64(len(frac))
	return d, true
}

// inexact reports whether the decimal text n has another value than f,
// its nearest double, as RFC 8785 writes it.
func inexact(n string, f float64) bool {
	shortest := strconv.FormatFloat(f, 'g', -1, 64)
	if shortest == n {
		return false
	}
	stored, ok := parseDecimal(n)
	if !ok {
		return true // a non-zero number this far out is no double's value
	}
	hashed, _ := parseDecimal(shortest)
	return stored != hashed
}

// unsafeInteger reports whether n, whose nearest double is f, is beyond
// ±(2^53−1).
func unsafeInteger(n string, f float64) bool {
	switch a := math.Abs(f); {
	case a < 1e15: // the nearest double is within far less than 1 of n
		return false
	case a > 1e16:
		return true
	}
	d, _ := parseDecimal(n) // about 1e15 to 1e16: the exponent is small
	if d.exp >= 0 {
		// An integer of at most 17 digits here.
		v, err := strconv.ParseUint(d.digits+strings.Repeat("0", int(d.exp)), 10, 64)
		return err != nil || v > 1<<53-1
	}
	cut := len(d.digits) + int(d.exp) // digits before the point; the rest is a non-zero fraction
	if cut <= 0 {
		return false
	}
	v, err := strconv.ParseUint(d.digits[:cut], 10, 64)
	return err != nil || v >= 1<<53-1
}
