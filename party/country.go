package party

import (
	"strings"

	"github.com/invoiced/invoiced/problem"
)

// Country is an ISO 3166-1 alpha-2 code of an officially assigned
// country, such as DE or GB.
type Country string

// countries are the 249 officially assigned ISO 3166-1 alpha-2 codes, as
// the ISO 3166 Maintenance Agency's Online Browsing Platform lists them
// (https://www.iso.org/obp/ui/#search/code/). An embedded list rather than
// golang.org/x/text/language's Region.IsCountry: that also takes CLDR's
// codes outside the standard (XK, UK, UN, the withdrawn SU and YU),
// and an invoice names a country the standard knows. The tests hold the
// list to CLDR's, which knows every code of it.
var countries = codeSet(`
AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ
BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ
CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ
DE DJ DK DM DO DZ
EC EE EG EH ER ES ET
FI FJ FK FM FO FR
GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY
HK HM HN HR HT HU
ID IE IL IM IN IO IQ IR IS IT
JE JM JO JP
KE KG KH KI KM KN KP KR KW KY KZ
LA LB LC LI LK LR LS LT LU LV LY
MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ
NA NC NE NF NG NI NL NO NP NR NU NZ
OM
PA PE PF PG PH PK PL PM PN PR PS PT PW PY
QA
RE RO RS RU RW
SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ
TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ
UA UG UM US UY UZ
VA VC VE VG VI VN VU
WF WS
YE YT
ZA ZM ZW`)

func codeSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(s) {
		m[c] = true
	}
	return m
}

// ParseCountry reads an ISO 3166-1 alpha-2 code, in either case, with
// surrounding spaces trimmed; anything else is 422 naming field. UK, the
// common slip, is refused naming GB.
func ParseCountry(field, s string) (Country, error) {
	c := compact(strings.TrimSpace(s), "")
	switch {
	case countries[c]:
		return Country(c), nil
	case c == "UK":
		return "", problem.Invalid(field, "must be an ISO 3166-1 alpha-2 country code: the United Kingdom is GB, not UK")
	case c == "EL":
		return "", problem.Invalid(field, "must be an ISO 3166-1 alpha-2 country code: Greece is GR (EL is its VAT prefix only)")
	}
	return "", problem.Invalid(field, "must be an ISO 3166-1 alpha-2 country code such as DE, FR or GB, not %q", clip(s))
}

// clip shortens s for a message that quotes it.
func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}
