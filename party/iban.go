package party

import (
	"strings"

	"github.com/invoiced/invoiced/problem"
)

// IBAN is an International Bank Account Number (ISO 13616) in its
// electronic form: upper case, no spaces.
type IBAN string

// ibanLengths is each IBAN country's IBAN length, from the SWIFT IBAN
// Registry, release 100 (January 2025,
// https://www.swift.com/standards/data-standards/iban-international-bank-account-number):
// its 89 country codes. Territories that use another country's code (the
// French overseas departments FR, Åland FI, Jersey, Guernsey and the Isle
// of Man GB) have no entry of their own. XK (Kosovo) is the registry's,
// not ISO 3166-1's.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
	"BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
	"DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
	"FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
	"GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
	"IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
	"LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
	"MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
	"PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
	"SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
	"SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
	"YE": 30,
}

// ParseIBAN reads an IBAN as people write it (spaces anywhere, either
// case) and returns its electronic form. It checks what ISO 13616 lets a
// machine check: a country of the IBAN registry, two check digits, that
// country's length, letters and digits only, and the MOD 97-10 check (ISO
// 7064) that catches every single mistyped character and most swaps. It
// cannot tell whether the account exists. Anything else is 422 naming
// field.
func ParseIBAN(field, s string) (IBAN, error) {
	c := compact(s, " ")
	if c == "" {
		return "", problem.Invalid(field, "must be an IBAN such as DE89 3704 0044 0532 0130 00")
	}
	if !isAlnum(c) {
		return "", problem.Invalid(field, "must be an IBAN: letters and digits only (spaces are ignored), such as DE89 3704 0044 0532 0130 00")
	}
	cc := c[:min(2, len(c))]
	want, ok := ibanLengths[cc]
	if !ok {
		return "", problem.Invalid(field, "must be an IBAN starting with the code of a country that uses IBANs, such as DE or FR, not %q", clip(cc))
	}
	if len(c) != want {
		return "", problem.Invalid(field, "must be %d characters for an IBAN of %s (spaces are ignored), not %d", want, cc, len(c))
	}
	if !isDigits(c[2:4]) {
		return "", problem.Invalid(field, "must have two check digits after its country code %s", cc)
	}
	if mod97(c[4:]+c[:4]) != 1 {
		return "", problem.Invalid(field, "is not a valid IBAN: its check digits do not match (a character mistyped or two swapped?)")
	}
	return IBAN(c), nil
}

// mod97 is s, letters read as A=10 … Z=35 (ISO 13616), modulo 97,
// computed digit by digit so that any length fits.
func mod97(s string) int {
	r := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'A' && ch <= 'Z' {
			v := int(ch-'A') + 10
			r = (r*100 + v) % 97
		} else {
			r = (r*10 + int(ch-'0')) % 97
		}
	}
	return r
}

// String returns the IBAN in groups of four, as it is printed (ISO 13616
// §5's paper format).
func (i IBAN) String() string {
	var b strings.Builder
	for n, r := range string(i) {
		if n > 0 && n%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// BIC is a Business Identifier Code (ISO 9362), 8 or 11 characters,
// upper case.
type BIC string

// ParseBIC reads a BIC: 4 letters of the institution, 2 of its country
// (ISO 3166-1, or XK as SWIFT assigns Kosovo), 2 letters or digits of its
// location, and an optional 3 of its branch; spaces are ignored and case
// is not kept. Anything else is 422 naming field.
func ParseBIC(field, s string) (BIC, error) {
	c := compact(s, " ")
	format := "must be a BIC (ISO 9362) of 8 or 11 characters such as DEUTDEFF or DEUTDEFF500: 4 letters for the bank, 2 for its country, 2 letters or digits for the location, and optionally 3 for the branch"
	if (len(c) != 8 && len(c) != 11) || !isAlnum(c) || !isLetters(c[:6]) {
		return "", problem.Invalid(field, "%s", format)
	}
	if cc := c[4:6]; !countries[cc] && cc != "XK" {
		return "", problem.Invalid(field, "must be a BIC whose 5th and 6th letters are a country code (ISO 3166-1), such as DE in DEUTDEFF; %s is none", cc)
	}
	return BIC(c), nil
}

// compact removes the characters of drop from s and upper-cases its
// ASCII letters. Only those: strings.ToUpper would turn ı (dotless i) and
// ſ (long s) into I and S, taking a character no one typed in an IBAN.
func compact(s, drop string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case strings.ContainsRune(drop, r):
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
