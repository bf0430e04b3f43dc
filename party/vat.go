package party

import (
	"regexp"
	"strings"

	"github.com/invoiced/invoiced/problem"
)

// VATID is a VAT identification number with its prefix, in compact form:
// upper case, without spaces, dots or dashes (DE136695976,
// CHE107787577IVA, NO995525828MVA). Only its form and, where a state
// publishes one, its check digits are checked here: whether a tax office
// registered it is a question for VIES, the EU's online lookup (or the
// UK's, Switzerland's, Norway's registers), which this service does not
// ask, so a well-formed number of no one passes.
type VATID string

// vatFormat is how one prefix's numbers are written.
type vatFormat struct {
	// number matches what follows the prefix.
	number *regexp.Regexp
	// says is the expected form, for the refusal.
	says string
	// check is the state's check-digit rule, nil where none is checked.
	check func(n string) bool
}

// vatFormats are the forms the European Commission's VIES documents for
// each member state ("VIES: VAT number validation", its FAQ 11), with EL,
// not GR, for Greece and XI for Northern Ireland, plus GB, Switzerland's
// UID with its VAT suffix and Norway's organisation number with MVA.
// Check digits are checked for the states whose rule is published and
// held by the tests to numbers in use: a rule that refused a real number
// would stop a real invoice.
var vatFormats = map[string]vatFormat{
	"AT": {re(`U\d{8}`), "ATU followed by 8 digits", checkAT},
	"BE": {re(`[01]\d{9}`), "BE followed by 10 digits, the first 0 or 1", checkBE},
	"BG": {re(`\d{9,10}`), "BG followed by 9 or 10 digits", nil},
	"CY": {re(`\d{8}[A-Z]`), "CY followed by 8 digits and a letter", nil},
	"CZ": {re(`\d{8,10}`), "CZ followed by 8, 9 or 10 digits", nil},
	"DE": {re(`[1-9]\d{8}`), "DE followed by 9 digits", checkDE},
	"DK": {re(`[1-9]\d{7}`), "DK followed by 8 digits", checkDK},
	"EE": {re(`\d{9}`), "EE followed by 9 digits", nil},
	"EL": {re(`\d{9}`), "EL followed by 9 digits", nil},
	"ES": {re(`[A-Z]\d{7}[A-Z0-9]|\d{8}[A-Z]`), "ES followed by 9 characters: a letter or digit, 7 digits, a letter or digit, with a letter first or last", checkES},
	"FI": {re(`\d{8}`), "FI followed by 8 digits", checkFI},
	"FR": {re(`[0-9A-HJ-NP-Z]{2}\d{9}`), "FR followed by 2 letters or digits (the key) and the 9 digits of the SIREN", checkFR},
	"HR": {re(`\d{11}`), "HR followed by 11 digits", nil},
	"HU": {re(`\d{8}`), "HU followed by 8 digits", nil},
	"IE": {re(`\d{7}[A-W][A-IW]?|\d[A-Z+*]\d{5}[A-W]`), "IE followed by 7 digits and 1 or 2 letters, or a digit, a letter, 5 digits and a letter", nil},
	"IT": {re(`\d{11}`), "IT followed by 11 digits", checkIT},
	"LT": {re(`\d{9}|\d{12}`), "LT followed by 9 or 12 digits", nil},
	"LU": {re(`\d{8}`), "LU followed by 8 digits", checkLU},
	"LV": {re(`\d{11}`), "LV followed by 11 digits", nil},
	"MT": {re(`[1-9]\d{7}`), "MT followed by 8 digits", nil},
	"NL": {re(`\d{9}B(0[1-9]|[1-9]\d)`), "NL followed by 9 digits, B and 2 digits (not 00)", checkNL},
	"PL": {re(`\d{10}`), "PL followed by 10 digits", checkPL},
	"PT": {re(`[1-9]\d{8}`), "PT followed by 9 digits", checkPT},
	"RO": {re(`[1-9]\d{1,9}`), "RO followed by 2 to 10 digits", nil},
	"SE": {re(`\d{10}01`), "SE followed by 12 digits, the last two 01", checkSE},
	"SI": {re(`[1-9]\d{7}`), "SI followed by 8 digits", checkSI},
	"SK": {re(`[1-9]\d{9}`), "SK followed by 10 digits", checkSK},
	"XI": {re(ukNumber), "XI followed by 9 or 12 digits, or GD or HA and 3 digits", nil},
	"GB": {re(ukNumber), "GB followed by 9 or 12 digits, or GD or HA and 3 digits", nil},
	"CH": {re(`\d{9}(MWST|TVA|IVA|TPV)?`), "CHE followed by 9 digits, optionally with MWST, TVA, IVA or TPV", checkCH},
	"NO": {re(`\d{9}(MVA)?`), "NO followed by 9 digits, optionally with MVA", checkNO},
}

// ukNumber is the UK's: 9 digits, 12 for a branch, GD for a government
// department and HA for a health authority.
const ukNumber = `\d{9}|\d{12}|GD\d{3}|HA\d{3}`

func re(s string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + s + `)$`) }

// euMembers are the prefixes of the 27 member states (EL is Greece).
var euMembers = codeSet(`AT BE BG CY CZ DE DK EE EL ES FI FR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK`)

// ParseVATID reads a VAT identification number as people write it
// (spaces, dots and dashes anywhere, either case) and returns its compact
// form. The prefix is a member state's (EL for Greece, XI for Northern
// Ireland), GB, CHE or NO; what follows must have that prefix's form and,
// where checked, check digits. Anything else is 422 naming field and the
// form expected.
func ParseVATID(field, s string) (VATID, error) {
	c := compact(s, " .-")
	if c == "" || !isVATChars(c) {
		return "", problem.Invalid(field, "must be a VAT identification number: a country prefix such as DE, then the number (letters and digits; spaces, dots and dashes are ignored)")
	}
	prefix, number := c[:min(2, len(c))], c[min(2, len(c)):]
	switch {
	case prefix == "GR":
		return "", problem.Invalid(field, "must start with EL for Greece (its VAT prefix is EL, not GR), then 9 digits")
	case prefix == "CH":
		if !strings.HasPrefix(number, "E") {
			return "", problem.Invalid(field, "must be a Swiss VAT number: %s", vatFormats["CH"].says)
		}
		number = number[1:]
	}
	f, ok := vatFormats[prefix]
	if !ok {
		return "", problem.Invalid(field, "must start with the prefix of an EU member state (EL for Greece, XI for Northern Ireland), GB, CHE or NO, then the number: %q has none", clip(s))
	}
	if !f.number.MatchString(number) {
		return "", problem.Invalid(field, "must be %s", f.says)
	}
	if f.check != nil && !f.check(number) {
		return "", problem.Invalid(field, "is not a valid VAT number of %s: its check digit does not match (a digit mistyped or two swapped?)", prefix)
	}
	return VATID(c), nil
}

// isVATChars: letters, digits and the + and * of old Irish numbers.
func isVATChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '*') {
			return false
		}
	}
	return true
}

// Prefix is the VAT prefix: a member state's (EL for Greece), XI, GB, CH
// or NO.
func (v VATID) Prefix() string {
	if v == "" {
		return ""
	}
	return string(v[:2])
}

// Country is the ISO 3166-1 country of the prefix: GR for EL, GB for XI.
func (v VATID) Country() Country {
	switch p := v.Prefix(); p {
	case "EL":
		return "GR"
	case "XI":
		return "GB"
	default:
		return Country(p)
	}
}

// EUMember reports whether the prefix is an EU member state's. XI is not:
// Northern Ireland takes part in the EU's VAT rules for goods only, which
// a caller that needs it asks for by the prefix.
func (v VATID) EUMember() bool { return euMembers[v.Prefix()] }

// digits returns the decimal digits of s as numbers; s must be digits.
func digits(s string) []int {
	d := make([]int, len(s))
	for i := range s {
		d[i] = int(s[i] - '0')
	}
	return d
}

// weighted is the sum of the digits of s times weights, position by
// position.
func weighted(s string, weights ...int) int {
	sum := 0
	for i, d := range digits(s[:len(weights)]) {
		sum += d * weights[i]
	}
	return sum
}

// luhn reports whether the digits of s pass the Luhn check (ISO/IEC
// 7812-1).
func luhn(s string) bool {
	sum := 0
	for i, d := range digits(s) {
		if (len(s)-i)%2 == 0 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// mod11 is the usual weighted MOD 11 check digit: 11 minus the weighted
// sum modulo 11, 0 for 11 and -1 (no valid number) for 10.
func mod11(n string, weights ...int) int {
	c := 11 - weighted(n, weights...)%11
	switch c {
	case 11:
		return 0
	case 10:
		return -1
	}
	return c
}

func lastDigit(n string) int { return int(n[len(n)-1] - '0') }

// checkAT: Austria's UID, U and 8 digits; the Luhn sum of the first 7
// digits decides the 8th.
func checkAT(n string) bool {
	d := n[1:]
	sum := 0
	for i, x := range digits(d[:7]) {
		if i%2 == 1 {
			x *= 2
			x = x/10 + x%10
		}
		sum += x
	}
	return (96-sum)%10 == lastDigit(d)
}

// checkBE: the last two digits are 97 minus the first eight modulo 97.
func checkBE(n string) bool {
	return 97-atoi(n[:8])%97 == atoi(n[8:])
}

// checkDE: ISO 7064 MOD 11,10 over the first 8 digits.
func checkDE(n string) bool {
	p := 10
	for _, d := range digits(n[:8]) {
		s := (d + p) % 10
		if s == 0 {
			s = 10
		}
		p = 2 * s % 11
	}
	return (11-p)%10 == lastDigit(n)
}

// checkDK: the digits weighted 2, 7, 6, 5, 4, 3, 2, 1 sum to a multiple
// of 11.
func checkDK(n string) bool { return weighted(n, 2, 7, 6, 5, 4, 3, 2, 1)%11 == 0 }

// checkES: a DNI or NIE (a person: digits, the letter of their value
// modulo 23), a company's CIF (a letter, 7 digits, a Luhn-like check as
// a digit or a letter), or the K, L and M of people without a DNI, which
// take the DNI's letter.
func checkES(n string) bool {
	const dni = "TRWAGMYFPDXBNJZSQVHLCKE"
	switch first := n[0]; {
	case first >= '0' && first <= '9':
		return isDigits(n[:8]) && dni[atoi(n[:8])%23] == n[8]
	case first == 'X' || first == 'Y' || first == 'Z':
		return isDigits(n[1:8]) && dni[atoi(string('0'+first-'X')+n[1:8])%23] == n[8]
	case first == 'K' || first == 'L' || first == 'M':
		return dni[atoi(n[1:8])%23] == n[8]
	}
	sum := 0
	for i, d := range digits(n[1:8]) {
		if i%2 == 0 {
			d *= 2
			d = d/10 + d%10
		}
		sum += d
	}
	c := (10 - sum%10) % 10
	return n[8] == byte('0'+c) || n[8] == "JABCDEFGHI"[c]
}

// checkFI: the digits weighted 7, 9, 10, 5, 8, 4, 2, 1 sum to a multiple
// of 11.
func checkFI(n string) bool { return weighted(n, 7, 9, 10, 5, 8, 4, 2, 1)%11 == 0 }

// checkFR: a numeric key is (12 + 3 × (SIREN mod 97)) mod 97. Keys with
// letters follow a rule the tax office does not publish; their form is
// checked only.
func checkFR(n string) bool {
	if !isDigits(n[:2]) {
		return true
	}
	return atoi(n[:2]) == (12+3*(atoi(n[2:])%97))%97
}

// checkIT: the 11 digits pass the Luhn check.
func checkIT(n string) bool { return luhn(n) }

// checkLU: the first six digits modulo 89 are the last two.
func checkLU(n string) bool { return atoi(n[:6])%89 == atoi(n[6:]) }

// checkNL: the BTW-id either passes the 11 test of the RSIN it was made
// from, or (those issued to sole traders since 2020) the MOD 97-10 of
// the whole number with its NL prefix, as an IBAN.
func checkNL(n string) bool {
	return (weighted(n, 9, 8, 7, 6, 5, 4, 3, 2)-int(n[8]-'0'))%11 == 0 || mod97("NL"+n) == 1
}

// checkPL: the first nine digits weighted 6, 5, 7, 2, 3, 4, 5, 6, 7,
// modulo 11, are the tenth.
func checkPL(n string) bool { return weighted(n, 6, 5, 7, 2, 3, 4, 5, 6, 7)%11 == lastDigit(n) }

// checkPT: MOD 11 over the first eight digits weighted 9 to 2, 10 read
// as 0.
func checkPT(n string) bool {
	c := 11 - weighted(n, 9, 8, 7, 6, 5, 4, 3, 2)%11
	if c >= 10 {
		c = 0
	}
	return c == lastDigit(n)
}

// checkSE: the organisation number (the first ten digits) passes the
// Luhn check.
func checkSE(n string) bool { return luhn(n[:10]) }

// checkSI: MOD 11 over the first seven digits weighted 8 to 2, 10 read
// as 0.
func checkSI(n string) bool {
	c := 11 - weighted(n, 8, 7, 6, 5, 4, 3, 2)%11
	switch c {
	case 10:
		c = 0
	case 11:
		return false
	}
	return c == lastDigit(n)
}

// checkSK: the number is a multiple of 11.
func checkSK(n string) bool { return atoi(n)%11 == 0 }

// checkCH: the UID's MOD 11 over its first eight digits weighted 5, 4, 3,
// 2, 7, 6, 5, 4 (eCH-0097).
func checkCH(n string) bool { return mod11(n, 5, 4, 3, 2, 7, 6, 5, 4) == int(n[8]-'0') }

// checkNO: the organisation number's MOD 11, weights 3, 2, 7, 6, 5, 4, 3,
// 2 (Brønnøysund Register Centre).
func checkNO(n string) bool { return mod11(n, 3, 2, 7, 6, 5, 4, 3, 2) == int(n[8]-'0') }

// atoi reads digits that fit an int (at most 12 here).
func atoi(s string) int {
	v := 0
	for _, d := range digits(s) {
		v = v*10 + d
	}
	return v
}
