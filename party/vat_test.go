package party_test

import (
	"testing"

	"github.com/invoiced/invoiced/party"
	"github.com/stretchr/testify/require"
)

// inUse are VAT numbers found on invoices and web pages, as written there
// (python-stdnum's collection, tests/test_eu_vat.doctest and
// test_ch_vat.doctest, and the registers' own examples), with the
// compact form each reads as. Every prefix is here; those whose check
// digits are checked have several, so that a rule wrongly written refuses
// one.
var inUse = map[string]party.VATID{
	"ATU 142 43 102":           "ATU14243102",
	"ATU 15159209":             "ATU15159209",
	"ATU 54300000":             "ATU54300000",
	"ATU13585627":              "ATU13585627",
	"ATU61195628":              "ATU61195628",
	"BE 0202.239.951":          "BE0202239951",
	"BE 0402 918 402":          "BE0402918402",
	"BE 0462423150":            "BE0462423150",
	"BE 0795 013 186":          "BE0795013186",
	"BE0428759497":             "BE0428759497",
	"BG 103873594":             "BG103873594",
	"BG 124 551 319":           "BG124551319",
	"BG7111042925":             "BG7111042925",
	"CY 10246672X":             "CY10246672X",
	"CY-10189098G":             "CY10189098G",
	"CY00632993 F":             "CY00632993F",
	"CZ 25123891":              "CZ25123891",
	"CZ 640903926":             "CZ640903926",
	"CZ 6956220612":            "CZ6956220612",
	"DE - 113866163":           "DE113866163",
	"DE 118619592":             "DE118619592",
	"DE 181 207 708":           "DE181207708",
	"DE 221.304.969":           "DE221304969",
	"DE 813 11 38 75":          "DE813113875",
	"DE136308783":              "DE136308783",
	"DE812847601":              "DE812847601",
	"DK 10 50 32 80":           "DK10503280",
	"DK 2566 2202":             "DK25662202",
	"DK-27630308":              "DK27630308",
	"DK10150817":               "DK10150817",
	"EE 100 931 558":           "EE100931558",
	"EE101256753":              "EE101256753",
	"EL 039868210":             "EL039868210",
	"EL-082857563":             "EL082857563",
	"El 800 179 925":           "EL800179925",
	"ES - Q0818001J":           "ESQ0818001J",
	"ES 54362315K":             "ES54362315K",
	"ES A-28184661":            "ESA28184661",
	"ES B64240914":             "ESB64240914",
	"ES F13005293":             "ESF13005293",
	"ES J99216582":             "ESJ99216582",
	"ES Q-2818015-F":           "ESQ2818015F",
	"ES R9600075G":             "ESR9600075G",
	"ES U99216426":             "ESU99216426",
	"ES V99218067":             "ESV99218067",
	"ES W4003922D":             "ESW4003922D",
	"ES X-5253868-R":           "ESX5253868R",
	"ES Y5277343F":             "ESY5277343F",
	"ES Z5277343K":             "ESZ5277343K",
	"ES-x-2482300w":            "ESX2482300W",
	"Es-a58951310":             "ESA58951310",
	"FI 02459042":              "FI02459042",
	"FI 0982651-1":             "FI09826511",
	"FI-214 95 540":            "FI21495540",
	"FI18261444":               "FI18261444",
	"FR 04409414364":           "FR04409414364",
	"FR 114 248 728 36":        "FR11424872836",
	"FR 19 552 008 443":        "FR19552008443",
	"FR 2143 2146 546":         "FR21432146546",
	"FR K 7399859412":          "FRK7399859412",
	"FR16000063601":            "FR16000063601",
	"fr 71383076817":           "FR71383076817",
	"HR 33392005961":           "HR33392005961",
	"HU -12509403":             "HU12509403",
	"HU 10672101":              "HU10672101",
	"IE 0005306C":              "IE0005306C",
	"IE 632 3420 C":            "IE6323420C",
	"IE 6433435IH":             "IE6433435IH",
	"IE 8223200u":              "IE8223200U",
	"IE8D79739I":               "IE8D79739I",
	"IE9Y71814N":               "IE9Y71814N",
	"IT - 01404480202":         "IT01404480202",
	"IT 0 0 6 1 8 2 8 0 4 9 9": "IT00618280499",
	"IT 00 595 000 217":        "IT00595000217",
	"IT00743110157":            "IT00743110157",
	"IT 12920760159":           "IT12920760159",
	"LT 100001354118":          "LT100001354118",
	"LT 119511515":             "LT119511515",
	"LU 10059929":              "LU10059929",
	"LU 109 676 28":            "LU10967628",
	"LU.248.70.640":            "LU24870640",
	"Lu 19980500":              "LU19980500",
	"LV 4000 3521 600":         "LV40003521600",
	"LV-40003241337":           "LV40003241337",
	"MT 1039-6417":             "MT10396417",
	"MT 17025737":              "MT17025737",
	"NL 001241 643 B01":        "NL001241643B01",
	"NL 806753742B01":          "NL806753742B01",
	"NL 8225.69.759 b01":       "NL822569759B01",
	"NL-8197.38.116.B.01":      "NL819738116B01",
	"NL.0094.10.806.B.01":      "NL009410806B01",
	"NL001162938B28":           "NL001162938B28",
	"NL002455799B11":           "NL002455799B11",
	"NL003376734B77":           "NL003376734B77",
	"PL 5211355116":            "PL5211355116",
	"PL 584-030-44-72":         "PL5840304472",
	"PL 777 26 68 285":         "PL7772668285",
	"PL5261025421":             "PL5261025421",
	"PT 500 019 720":           "PT500019720",
	"PT 500135.495":            "PT500135495",
	"PT-505 856 468":           "PT505856468",
	"PT503038083":              "PT503038083",
	"RO 11358544":              "RO11358544",
	"RO 1822964":               "RO1822964",
	"RO 573768":                "RO573768",
	"Ro 15071875":              "RO15071875",
	"SE 202 100-5000 01":       "SE202100500001",
	"SE 556.383.740.901":       "SE556383740901",
	"SE-5562245190-01":         "SE556224519001",
	"Se 556250398601":          "SE556250398601",
	"SI 26808498":              "SI26808498",
	"SI 3609 7152":             "SI36097152",
	"SI-83815201":              "SI83815201",
	"SI 50223054":              "SI50223054",
	"SK 1078449064":            "SK1078449064",
	"SK 202 274 96 19":         "SK2022749619",
	"SK2022193459":             "SK2022193459",
	"XI 980 7806 84":           "XI980780684",
	"GB 980 7806 84":           "GB980780684",
	"GB980780684001":           "GB980780684001",
	"GBGD001":                  "GBGD001",
	"GBHA599":                  "GBHA599",
	"CHE-1 76.814.97 5 MWST":   "CHE176814975MWST",
	"CHE-107.787.577 IVA":      "CHE107787577IVA",
	"CHE-108.113.335 MwST":     "CHE108113335MWST",
	"CHE-110.576.236 TVA":      "CHE110576236TVA",
	"CHE-116.046.681 TPV":      "CHE116046681TPV",
	"CHE-400.352.783":          "CHE400352783",
	"NO 995 525 828 MVA":       "NO995525828MVA",
	"NO 988 077 917 MVA":       "NO988077917MVA",
	"NO923609016":              "NO923609016",
}

func TestParseVATIDTakesNumbersInUse(t *testing.T) {
	t.Parallel()
	prefixes := map[string]bool{}
	for in, want := range inUse {
		got, err := party.ParseVATID("vat_id", in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		again, err := party.ParseVATID("vat_id", string(got))
		require.NoError(t, err)
		require.Equal(t, got, again, "the compact form reads back")
		prefixes[got.Prefix()] = true
	}
	require.Len(t, prefixes, 27+4, "every member state, XI, GB, CH and NO")
}

// checkAt is the index, in a compact VAT number, of a character its
// prefix's check covers.
var checkAt = map[string]func(v string) int{
	"NL": func(string) int { return 10 }, // the 9th digit: B01 is not checked
	"CH": func(string) int { return 11 },
	"NO": func(string) int { return 10 },
	"SE": func(string) int { return 11 },
	"FR": func(string) int { return 5 }, // a digit of the SIREN
}

// Each number in use of a prefix with check digits, with one checked
// character changed, is refused naming its check digit: single mistypes
// are what check digits catch.
func TestParseVATIDRefusesMistypedCheckDigits(t *testing.T) {
	t.Parallel()
	checked := map[string]bool{"AT": true, "BE": true, "DE": true, "DK": true, "ES": true, "FI": true, "FR": true, "IT": true,
		"LU": true, "NL": true, "PL": true, "PT": true, "SE": true, "SI": true, "SK": true, "CH": true, "NO": true}
	tried := map[string]int{}
	for _, v := range inUse {
		p := v.Prefix()
		if !checked[p] || v == "FRK7399859412" { // a key with letters: its form only
			continue
		}
		i := len(v) - 1
		if at, ok := checkAt[p]; ok {
			i = at(string(v))
		}
		b := []byte(v)
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			b[i] = '0' + (c-'0'+1)%10
		default:
			b[i] = 'A' + (c-'A'+1)%26
		}
		_, err := party.ParseVATID("customer.vat_id", string(b))
		refusedField(t, err, "customer.vat_id", "check digit does not match")
		tried[p]++
	}
	for p := range checked {
		require.GreaterOrEqual(t, tried[p], 2, "%s: numbers in use of every checked prefix", p)
	}
	// Mangled by python-stdnum's tests, as refused there.
	for _, s := range []string{"ATU 143 43 102", "ATU46080904", "BE 0406.139.583", "DE 125014855", "DE 246 495 415", "DK-27996592",
		"ES 54362415K", "ES-x-2322300w", "Es-a48951310", "FR 04409414264", "FR 21 326 565 603", "SK 1078449164", "SK 2020457679"} {
		_, err := party.ParseVATID("vat_id", s)
		refusedField(t, err, "vat_id", "check digit does not match")
	}
}

// A malformed number is refused with the form its prefix expects.
func TestParseVATIDSaysTheFormExpected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "must be a VAT identification number: a country prefix such as DE"},
		{"DE 136/695/976", "letters and digits"},
		{"DE13669597\x00", "letters and digits"},
		{"DE1366959\u00e46", "letters and digits"},
		{"123456789", `must start with the prefix of an EU member state (EL for Greece, XI for Northern Ireland), GB, CHE or NO, then the number: "123456789" has none`},
		{"US123456789", "must start with the prefix of an EU member state"},
		{"D", "must start with the prefix of an EU member state"},
		{"GR094064321", "must start with EL for Greece (its VAT prefix is EL, not GR)"},
		{"DE12345678", "must be DE followed by 9 digits"},
		{"DE0123456789", "must be DE followed by 9 digits"},
		{"DE", "must be DE followed by 9 digits"},
		{"ATU1234567", "must be ATU followed by 8 digits"},
		{"AT12345678", "must be ATU followed by 8 digits"},
		{"BE2123456789", "must be BE followed by 10 digits, the first 0 or 1"},
		{"BE428759497", "must be BE followed by 10 digits"},
		{"ES123456789", "must be ES followed by 9 characters"},
		{"FRO1123456789", "must be FR followed by 2 letters or digits (the key) and the 9 digits of the SIREN"},
		{"IE1234567", "must be IE followed by 7 digits and 1 or 2 letters"},
		{"NL123456789B00", "must be NL followed by 9 digits, B and 2 digits (not 00)"},
		{"NL123456789", "must be NL followed by 9 digits, B"},
		{"SE556383740902", "must be SE followed by 12 digits, the last two 01"},
		{"RO0123", "must be RO followed by 2 to 10 digits"},
		{"RO12345678901", "must be RO followed by 2 to 10 digits"},
		{"LT1234567890", "must be LT followed by 9 or 12 digits"},
		{"GB12345678", "must be GB followed by 9 or 12 digits, or GD or HA and 3 digits"},
		{"XIGD01", "must be XI followed by 9 or 12 digits"},
		{"CH107787577", "must be a Swiss VAT number: CHE followed by 9 digits, optionally with MWST, TVA, IVA or TPV"},
		{"CHE107787577 VAT", "must be CHE followed by 9 digits, optionally with MWST"},
		{"NO995525828 MOMS", "must be NO followed by 9 digits, optionally with MVA"},
	} {
		_, err := party.ParseVATID("vat_id", tc.in)
		refusedField(t, err, "vat_id", tc.want)
	}
}

func TestVATIDPrefixCountryAndMembership(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v        party.VATID
		prefix   string
		country  party.Country
		euMember bool
	}{
		{"DE136308783", "DE", "DE", true},
		{"EL094064321", "EL", "GR", true},
		{"XI980780684", "XI", "GB", false},
		{"GB980780684", "GB", "GB", false},
		{"CHE107787577IVA", "CH", "CH", false},
		{"NO995525828MVA", "NO", "NO", false},
		{"", "", "", false},
	} {
		require.Equal(t, tc.prefix, tc.v.Prefix(), tc.v)
		require.Equal(t, tc.country, tc.v.Country(), tc.v)
		require.Equal(t, tc.euMember, tc.v.EUMember(), tc.v)
	}
}
