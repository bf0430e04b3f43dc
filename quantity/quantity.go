// Package quantity holds the rules for a line's quantity: a decimal with
// at most four decimals (7.5 hours, 0.125 kg, -2 units on a credit line),
// held as an int64 count of ten-thousandths so that no float ever carries
// one. Clients send it as a decimal string ("7.5"); a JSON integer (7) is
// accepted too, a JSON number with a fraction or an exponent is not, since
// JSON decoders in most languages read it into a binary float, where 0.1
// is already not 0.1. It is written back as the shortest decimal string.
package quantity

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

// Quantity is a decimal quantity in ten-thousandths: 7.5 is 75000.
type Quantity int64

// Scale is the number of decimals a Quantity holds. Four cover what
// people bill in (0.125 kg, 0.25 h, 1.5 m²) and leave ±922,337,203,685,477
// whole units of room in an int64.
const Scale = 4

// one is 10^Scale: the Quantity 1.
const one = 10000

// One is the quantity 1.
const One Quantity = one

// Refusals, phrased to follow the name of the field they refuse.
var (
	// ErrEmpty: nothing, or an empty string.
	ErrEmpty = errors.New(`must not be empty: send a decimal string such as "7.5"`)
	// ErrType: a JSON value that is neither a string nor a number (null,
	// true, an object or an array).
	ErrType = errors.New(`must be a decimal string such as "7.5" (or a whole JSON number such as 7)`)
	// ErrFloat: a JSON number with a fraction or an exponent.
	ErrFloat = errors.New(`must be sent as a decimal string such as "7.5": a JSON number with a fraction or an exponent is read as a binary float by most clients, which cannot hold every decimal exactly`)
	// ErrSyntax: a string that is not a plain decimal.
	ErrSyntax = errors.New(`must be a decimal such as "7.5", "0.125" or "-2": digits with an optional leading minus sign and decimal point, no exponent, spaces or thousands separators`)
	// ErrDecimals: more than Scale decimals.
	ErrDecimals = errors.New("must have at most 4 decimals")
	// ErrRange: outside what an int64 of ten-thousandths holds.
	ErrRange = errors.New("must be between -922337203685477.5808 and 922337203685477.5807")
	// ErrOverflow: a line amount (quantity × unit amount) outside int64.
	ErrOverflow = errors.New("quantity × unit amount overflows the largest representable amount")
)

// Parse reads a quantity from a JSON value: a decimal string ("7.5",
// "0.125", "-2", "12"; leading zeros are harmless, a trailing point or
// an exponent is not) or a whole JSON number (7). Surrounding JSON
// whitespace is ignored; anything else is refused with one of the errors
// above.
func Parse(raw json.RawMessage) (Quantity, error) {
	raw = bytes.Trim(raw, jsonSpace)
	if len(raw) == 0 {
		return 0, ErrEmpty
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, ErrSyntax
		}
		if s == "" {
			return 0, ErrEmpty
		}
		return parseDecimal(s)
	case c == '-' || '0' <= c && c <= '9':
		if !json.Valid(raw) {
			return 0, ErrSyntax
		}
		if bytes.ContainsAny(raw, ".eE") {
			return 0, ErrFloat
		}
		return parseDecimal(string(raw))
	default:
		return 0, ErrType
	}
}

// jsonSpace is the whitespace JSON allows around a value (RFC 8259 §2);
// bytes.TrimSpace would also drop Unicode's, such as U+00A0.
const jsonSpace = " \t\n\r"

// parseDecimal reads -?digits(.digits)? with at most Scale decimals.
func parseDecimal(s string) (Quantity, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || dot && frac == "" || !digits(whole) || !digits(frac) {
		return 0, ErrSyntax
	}
	if len(frac) > Scale {
		return 0, ErrDecimals
	}
	// The magnitude may reach 2^63 for a negative value (math.MinInt64).
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var mag uint64
	for _, c := range whole + frac + strings.Repeat("0", Scale-len(frac)) {
		d := uint64(c - '0')
		if mag > (limit-d)/10 {
			return 0, ErrRange
		}
		mag = mag*10 + d
	}
	if neg {
		// Two's complement: 2^63 becomes math.MinInt64.
		return Quantity(-mag), nil //nolint:gosec // wraps by design
	}
	return Quantity(mag), nil //nolint:gosec // mag <= math.MaxInt64
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Whole returns the quantity n (n units), or ErrRange.
func Whole(n int64) (Quantity, error) {
	if n > math.MaxInt64/one || n < math.MinInt64/one {
		return 0, ErrRange
	}
	return Quantity(n * one), nil
}

// magnitude returns |q| as a uint64, which holds |math.MinInt64|.
func (q Quantity) magnitude() uint64 {
	if q < 0 {
		return -uint64(q) //nolint:gosec // two's complement negation
	}
	return uint64(q)
}

// parts returns |q|'s whole part and its decimals without trailing zeros
// ("" for a whole number): 7.5 is (7, "5"), 0.125 is (0, "125").
func (q Quantity) parts() (uint64, string) {
	u := q.magnitude()
	f := u % one
	if f == 0 {
		return u / one, ""
	}
	s := strconv.FormatUint(f+one, 10)[1:] // zero-padded to Scale digits
	return u / one, strings.TrimRight(s, "0")
}

// String returns the shortest decimal for q: "7.5", "12", "-0.125".
func (q Quantity) String() string {
	whole, frac := q.parts()
	s := strconv.FormatUint(whole, 10)
	if frac != "" {
		s += "." + frac
	}
	if q < 0 {
		s = "-" + s
	}
	return s
}

// MarshalJSON writes q as a decimal string: "7.5".
func (q Quantity) MarshalJSON() ([]byte, error) {
	return []byte(`"` + q.String() + `"`), nil
}

// UnmarshalJSON reads q as Parse does; null is refused like any other
// value that is not a quantity.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	v, err := Parse(b)
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// Times returns the line amount q × unitAmount in the unit amount's minor
// units, rounded half-even (a half cent goes to the even cent, so a long
// run of them does not drift upwards), or ErrOverflow when it leaves
// int64. The product is taken in 128 bits, so only a result that does not
// fit is an overflow: 7.5 × 1999 is 14992.5, so 14992.
func (q Quantity) Times(unitAmount int64) (int64, error) {
	neg := (q < 0) != (unitAmount < 0)
	ua := uint64(unitAmount)
	if unitAmount < 0 {
		ua = -ua
	}
	hi, lo := bits.Mul64(q.magnitude(), ua)
	if hi >= one {
		// The quotient would not fit 64 bits (and Div64 would panic).
		return 0, ErrOverflow
	}
	quo, rem := bits.Div64(hi, lo, one)
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	if rem > one/2 || rem == one/2 && quo%2 == 1 {
		if quo >= limit {
			return 0, ErrOverflow
		}
		quo++
	}
	if quo > limit {
		return 0, ErrOverflow
	}
	if neg {
		return int64(-quo), nil //nolint:gosec // two's complement, quo <= 2^63
	}
	return int64(quo), nil //nolint:gosec // quo <= math.MaxInt64
}

// printer returns x/text's printer for lang (a BCP 47 tag such as "en",
// "de", "fr"); a tag it cannot parse gets English.
func printer(lang string) *message.Printer {
	tag, err := language.Parse(lang)
	if err != nil {
		tag = language.English
	}
	return message.NewPrinter(tag)
}

// Format renders q for people reading lang: "7.5" and "1,234.5" in en,
// "7,5" and "1.234,5" in de, "7,5" and "1 234,5" (a no-break space) in
// fr. Every symbol and digit comes from x/text's CLDR data, and no float
// is involved: the whole part and the decimals are formatted as integers,
// joined by the decimal separator x/text prints in 5.0 (number.Scale(1)).
func (q Quantity) Format(lang string) string {
	p := printer(lang)
	whole, frac := q.parts()
	s := p.Sprint(number.Decimal(whole))
	if frac != "" {
		f, _ := strconv.ParseUint(frac, 10, 64)
		sep := strings.TrimSuffix(strings.TrimPrefix(
			p.Sprint(number.Decimal(5, number.Scale(1))), p.Sprint(number.Decimal(5))), p.Sprint(number.Decimal(0)))
		s += sep + p.Sprint(number.Decimal(f, number.MinIntegerDigits(len(frac)), number.NoSeparator()))
	}
	if q < 0 {
		s = strings.TrimSuffix(p.Sprint(number.Decimal(-1)), p.Sprint(number.Decimal(1))) + s
	}
	return s
}

// Plural reports whether a unit's name after q, as Format shows it, takes
// its plural form in lang, by CLDR's cardinal plural rules (x/text's
// feature/plural): 1 hour but 1.5 hours and 0 hours in English, 1,5 heure
// and 0 heure in French. Any form other than "one" counts as plural.
func (q Quantity) Plural(lang string) bool {
	tag, err := language.Parse(lang)
	if err != nil {
		tag = language.English
	}
	whole, frac := q.parts()
	w := strconv.FormatUint(whole, 10)
	ds := make([]byte, 0, len(w)+len(frac))
	for _, c := range w + frac {
		ds = append(ds, byte(c-'0'))
	}
	return plural.Cardinal.MatchDigits(tag, ds, len(w), len(frac)) != plural.One
}
