// Package money holds the rules for amounts: an amount is an int64 count of
// minor units of an ISO 4217 currency, whose exponent says how many minor
// units make a major one (JPY 0, EUR 2, BHD 3). There are no floats here:
// tax is a rate in basis points rounded half-even per line, and every sum is
// checked so an overflow becomes a 422 instead of a silent wrap.
package money

import (
	"fmt"
	"maps"
	"math"
	"math/bits"
	"net/http"

	"github.com/invoiced/invoiced/problem"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

// CodeAmountOverflow is the problem code of an amount that does not fit an
// int64 count of minor units.
const CodeAmountOverflow = "AMOUNT_OVERFLOW"

// MaxTaxRateBPS is 100 % in basis points; a tax rate above it is invalid.
const MaxTaxRateBPS = 10000

// currencies maps each active ISO 4217 alphabetic code to its minor-unit
// exponent (ISO 4217 list one, "Minor unit" column). Funds codes and
// precious metals (XAU, XDR, …) are left out: nobody invoices in them.
var currencies = map[string]int{
	"AED": 2, "AFN": 2, "ALL": 2, "AMD": 2, "ANG": 2, "AOA": 2, "ARS": 2, "AUD": 2,
	"AWG": 2, "AZN": 2, "BAM": 2, "BBD": 2, "BDT": 2, "BGN": 2, "BHD": 3, "BIF": 0,
	"BMD": 2, "BND": 2, "BOB": 2, "BRL": 2, "BSD": 2, "BTN": 2, "BWP": 2, "BYN": 2,
	"BZD": 2, "CAD": 2, "CDF": 2, "CHF": 2, "CLP": 0, "CNY": 2, "COP": 2, "CRC": 2,
	"CUP": 2, "CVE": 2, "CZK": 2, "DJF": 0, "DKK": 2, "DOP": 2, "DZD": 2, "EGP": 2,
	"ERN": 2, "ETB": 2, "EUR": 2, "FJD": 2, "FKP": 2, "GBP": 2, "GEL": 2, "GHS": 2,
	"GIP": 2, "GMD": 2, "GNF": 0, "GTQ": 2, "GYD": 2, "HKD": 2, "HNL": 2, "HTG": 2,
	"HUF": 2, "IDR": 2, "ILS": 2, "INR": 2, "IQD": 3, "IRR": 2, "ISK": 0, "JMD": 2,
	"JOD": 3, "JPY": 0, "KES": 2, "KGS": 2, "KHR": 2, "KMF": 0, "KPW": 2, "KRW": 0,
	"KWD": 3, "KYD": 2, "KZT": 2, "LAK": 2, "LBP": 2, "LKR": 2, "LRD": 2, "LSL": 2,
	"LYD": 3, "MAD": 2, "MDL": 2, "MGA": 2, "MKD": 2, "MMK": 2, "MNT": 2, "MOP": 2,
	"MRU": 2, "MUR": 2, "MVR": 2, "MWK": 2, "MXN": 2, "MYR": 2, "MZN": 2, "NAD": 2,
	"NGN": 2, "NIO": 2, "NOK": 2, "NPR": 2, "NZD": 2, "OMR": 3, "PAB": 2, "PEN": 2,
	"PGK": 2, "PHP": 2, "PKR": 2, "PLN": 2, "PYG": 0, "QAR": 2, "RON": 2, "RSD": 2,
	"RUB": 2, "RWF": 0, "SAR": 2, "SBD": 2, "SCR": 2, "SDG": 2, "SEK": 2, "SGD": 2,
	"SHP": 2, "SLE": 2, "SOS": 2, "SRD": 2, "SSP": 2, "STN": 2, "SVC": 2, "SYP": 2,
	"SZL": 2, "THB": 2, "TJS": 2, "TMT": 2, "TND": 3, "TOP": 2, "TRY": 2, "TTD": 2,
	"TWD": 2, "TZS": 2, "UAH": 2, "UGX": 0, "USD": 2, "UYI": 0, "UYU": 2, "UYW": 4,
	"UZS": 2, "VES": 2, "VND": 0, "VUV": 0, "WST": 2, "XAF": 0, "XCD": 2, "XCG": 2,
	"XOF": 0, "XPF": 0, "YER": 2, "ZAR": 2, "ZMW": 2, "ZWG": 2,
	"CLF": 4,
}

// Exponent returns the number of minor-unit digits of currency (an
// upper-case ISO 4217 code) and whether the code is known.
func Exponent(currency string) (int, bool) {
	e, ok := currencies[currency]
	return e, ok
}

// Exponents returns a copy of the whole table: code → minor-unit digits,
// for a page's script that shows amounts as Display does.
func Exponents() map[string]int {
	return maps.Clone(currencies)
}

// Valid reports whether currency is a known ISO 4217 code.
func Valid(currency string) bool {
	_, ok := currencies[currency]
	return ok
}

// Display renders amount minor units of currency for people: grouped
// thousands, the currency's ISO 4217 digits, the code last — 1623750 USD
// is "16,237.50 USD", 4072 JPY "4,072 JPY", 2110 BHD "2.110 BHD". One style
// for every currency (ADR-0016): a code says which currency where a symbol
// would not ($ is a score of currencies, ¥ two), it draws in any font (the
// document's font has no ₹ ₽ ₩), and amounts still line up on the right.
// The API carries integers; this is for pages, documents, the CLI and logs.
func Display(amount int64, currency string) string {
	return Grouped(amount, currency) + " " + currency
}

// english groups the integer part: one locale for the whole product,
// whose pages are in English.
var english = message.NewPrinter(language.English)

// Grouped is Display without the code, for a column whose currency is
// stated once ("16,237.50"). Digits come from our ISO 4217 table, not
// CLDR's (x/text disagrees on 28 codes, e.g. IDR 0, IQD 0): x/text only
// groups the integer part, so no float ever holds an amount. An unknown
// code shows the minor units as they are.
func Grouped(amount int64, currency string) string {
	exp := currencies[currency]
	// uint64 keeps math.MinInt64 representable after negation.
	u := uint64(amount)
	if amount < 0 {
		u = -u
	}
	pow := uint64(1)
	for range exp {
		pow *= 10
	}
	s := english.Sprint(number.Decimal(u / pow))
	if exp > 0 {
		s += fmt.Sprintf(".%0*d", exp, u%pow)
	}
	if amount < 0 {
		s = "-" + s
	}
	return s
}

// Overflow is the 422 for a computation on field that left int64.
func Overflow(field string) *problem.Error {
	e := problem.New(http.StatusUnprocessableEntity, CodeAmountOverflow, "an amount is too large to represent")
	e.Errors = []problem.FieldError{{Field: field, Message: "amount overflows the largest representable value"}}
	return e
}

// Add returns a+b, or an overflow problem naming field.
func Add(a, b int64, field string) (int64, error) {
	s := a + b
	// Overflow happened iff both operands share a sign the sum lacks.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, Overflow(field)
	}
	return s, nil
}

// Mul returns a*b, or an overflow problem naming field.
func Mul(a, b int64, field string) (int64, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) || p/b != a {
		return 0, Overflow(field)
	}
	return p, nil
}

// Tax returns amount × rateBPS / 10000 rounded half-even (banker's
// rounding, so a long run of half-cent lines does not drift upwards), for a
// non-negative amount and a rate in 0..MaxTaxRateBPS. The product is taken
// in 128 bits, so only a result outside int64 is an overflow.
func Tax(amount int64, rateBPS int64, field string) (int64, error) {
	if amount < 0 || rateBPS < 0 || rateBPS > MaxTaxRateBPS {
		return 0, problem.Invalid(field, "tax needs a non-negative amount and a rate between 0 and %d basis points", MaxTaxRateBPS)
	}
	hi, lo := bits.Mul64(uint64(amount), uint64(rateBPS))
	// hi < 10000 always holds here (both factors fit 63 and 14 bits), so
	// Div64 cannot panic.
	q, r := bits.Div64(hi, lo, 10000)
	switch {
	case r > 5000, r == 5000 && q%2 == 1:
		q++
	}
	if q > math.MaxInt64 {
		return 0, Overflow(field)
	}
	return int64(q), nil
}
