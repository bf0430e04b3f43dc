package party_test

import (
	"strings"
	"testing"

	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// refusedField asserts err is a 422 VALIDATION_FAILED naming field, with
// a message containing want, and returns the message.
func refusedField(t *testing.T, err error, field, want string) string {
	t.Helper()
	pe, ok := problem.As(err)
	require.True(t, ok, "want a problem, got %v", err)
	require.Equal(t, 422, pe.Status)
	require.Equal(t, problem.CodeValidation, pe.Code)
	require.Len(t, pe.Errors, 1, "%+v", pe.Errors)
	require.Equal(t, field, pe.Errors[0].Field)
	require.Contains(t, pe.Errors[0].Message, want)
	return pe.Errors[0].Message
}

// registryIBANs are the electronic-format examples of the SWIFT IBAN
// Registry, release 100: one for each of its 89 countries.
var registryIBANs = []string{
	"AD1200012030200359100100", "AE070331234567890123456", "AL47212110090000000235698741", "AT611904300234573201",
	"AZ21NABZ00000000137010001944", "BA391290079401028494", "BE68539007547034", "BG80BNBG96611020345678",
	"BH67BMAG00001299123456", "BI4210000100010000332045181", "BR1800360305000010009795493C1", "BY13NBRB3600900000002Z00AB00",
	"CH9300762011623852957", "CR05015202001026284066", "CY17002001280000001200527600", "CZ6508000000192000145399",
	"DE89370400440532013000", "DJ2100010000000154000100186", "DK5000400440116243", "DO28BAGR00000001212453611324",
	"EE382200221020145685", "EG380019000500000000263180002", "ES9121000418450200051332", "FI2112345600000785",
	"FK88SC123456789012", "FO6264600001631634", "FR1420041010050500013M02606", "GB29NWBK60161331926819",
	"GE29NB0000000101904917", "GI75NWBK000000007099453", "GL8964710001000206", "GR1601101250000000012300695",
	"GT82TRAJ01020000001210029690", "HN88CABF00000000000250005469", "HR1210010051863000160", "HU42117730161111101800000000",
	"IE29AIBK93115212345678", "IL620108000000099999999", "IQ98NBIQ850123456789012", "IS140159260076545510730339",
	"IT60X0542811101000000123456", "JO94CBJO0010000000000131000302", "KW81CBKU0000000000001234560101", "KZ86125KZT5004100100",
	"LB62099900000001001901229114", "LC55HEMM000100010012001200023015", "LI21088100002324013AA", "LT121000011101001000",
	"LU280019400644750000", "LV80BANK0000435195001", "LY83002048000020100120361", "MC5811222000010123456789030",
	"MD24AG000225100013104168", "ME25505000012345678951", "MK07250120000058984", "MN121234123456789123",
	"MR1300020001010000123456753", "MT84MALT011000012345MTLCAST001S", "MU17BOMM0101101030300200000MUR", "NI45BAPR00000013000003558124",
	"NL91ABNA0417164300", "NO9386011117947", "OM810180000001299123456", "PK36SCBL0000001123456702",
	"PL61109010140000071219812874", "PS92PALS000000000400123456702", "PT50000201231234567890154", "QA58DOHB00001234567890ABCDEFG",
	"RO49AAAA1B31007593840000", "RS35260005601001611379", "RU0304452522540817810538091310419", "SA0380000000608010167519",
	"SC18SSCB11010000000000001497USD", "SD2129010501234001", "SE4550000000058398257466", "SI56263300012039086",
	"SK3112000000198742637541", "SM86U0322509800000000270100", "SO211000001001000100141", "ST23000100010051845310146",
	"SV62CENR00000000000000700025", "TL380080012345678910157", "TN5910006035183598478831", "TR330006100519786457841326",
	"UA213223130000026007233566001", "VA59001123000012345678", "VG96VPVG0000012345678901", "XK051212012345678906",
	"YE15CBYE0001018861234567891234",
}

// Every example the registry publishes passes, in its electronic form and
// as printed in groups of four, and reads back the same; the examples
// cover every country of the length table, and no other.
func TestParseIBANTakesTheRegistrysExamples(t *testing.T) {
	t.Parallel()
	countries := map[string]bool{}
	for _, s := range registryIBANs {
		got, err := party.ParseIBAN("iban", s)
		require.NoError(t, err, s)
		require.Equal(t, party.IBAN(s), got)
		printed, err := party.ParseIBAN("iban", strings.ToLower(got.String()))
		require.NoError(t, err, got.String())
		require.Equal(t, got, printed, "the printed form in lower case reads back")
		require.False(t, countries[s[:2]], "one example per country: %s", s)
		countries[s[:2]] = true
	}
	require.Len(t, countries, 89)
	require.Equal(t, "DE89 3704 0044 0532 0130 00", party.IBAN("DE89370400440532013000").String())
	require.Equal(t, "NO93 8601 1117 947", party.IBAN("NO9386011117947").String())
}

// MOD 97-10 catches every single mistyped character: each example with
// any one of its characters after the country code changed is refused.
func TestParseIBANRefusesEverySingleMistype(t *testing.T) {
	t.Parallel()
	for _, s := range registryIBANs {
		for i := 2; i < len(s); i++ {
			b := []byte(s)
			switch c := b[i]; {
			case c >= '0' && c <= '9':
				b[i] = '0' + (c-'0'+1)%10
			default:
				b[i] = 'A' + (c-'A'+1)%26
			}
			_, err := party.ParseIBAN("bank_accounts[0].iban", string(b))
			require.Error(t, err, "%s (from %s)", b, s)
			pe, _ := problem.As(err)
			require.Equal(t, "bank_accounts[0].iban", pe.Errors[0].Field)
		}
	}
}

func TestParseIBANSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "must be an IBAN such as"},
		{"   ", "must be an IBAN such as"},
		{"DE89-3704-0044-0532-0130-00", "letters and digits only"},
		{"DE89 3704 0044 0532 0130 0\u00e4", "letters and digits only"},
		{"DE89 3704 0044 0532 0130 0\u0131", "letters and digits only"}, // dotless i is no I
		{"ZZ89370400440532013000", `not "ZZ"`},
		{"US89370400440532013000", `not "US"`},
		{"D", `not "D"`},
		{"DE8937040044053201300", "must be 22 characters for an IBAN of DE (spaces are ignored), not 21"},
		{"DE893704004405320130000", "not 23"},
		{"DEXX370400440532013000", "two check digits after its country code DE"},
		{"DE88370400440532013000", "check digits do not match"},
		{"DE89370400440532031000", "check digits do not match"}, // two digits swapped
	} {
		_, err := party.ParseIBAN("iban", tc.in)
		refusedField(t, err, "iban", tc.want)
	}
}

func TestParseBIC(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]party.BIC{
		"DEUTDEFF":       "DEUTDEFF",
		"deutdeff500":    "DEUTDEFF500",
		" DEUT DE FF ":   "DEUTDEFF",
		"DEUT DE FF 500": "DEUTDEFF500",
		"NWBKGB2L":       "NWBKGB2L",
		"BNPAFRPPXXX":    "BNPAFRPPXXX",
		"GENODEF1S04":    "GENODEF1S04",
		"UBSWCHZH80A":    "UBSWCHZH80A",
		"RBKOXKPR":       "RBKOXKPR", // Kosovo: SWIFT's XK
	} {
		got, err := party.ParseBIC("bic", in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "8 or 11 characters"},
		{"DEUTDEF", "8 or 11 characters"},
		{"DEUTDEFF50", "8 or 11 characters"},
		{"DEUTDEFF5000", "8 or 11 characters"},
		{"DEU1DEFF", "4 letters for the bank"},
		{"DEUTD1FF", "2 for its country"},
		{"DEUTDEF_", "8 or 11 characters"},
		{"DEUTZZFF", "ZZ is none"},
		{"DEUTUKFF", "UK is none"},
		{"DEUTDEFF\u0131", "8 or 11 characters"},
	} {
		_, err := party.ParseBIC("bank_accounts[1].bic", tc.in)
		refusedField(t, err, "bank_accounts[1].bic", tc.want)
	}
}
