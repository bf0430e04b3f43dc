package party_test

import (
	"strings"
	"testing"

	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/language"
)

// The list holds ISO 3166-1's 249 assigned codes, each one CLDR knows as
// a country; two-letter codes CLDR calls countries but the standard does
// not assign (XK, UK, UN) and reserved ones are refused.
func TestParseCountry(t *testing.T) {
	t.Parallel()
	n := 0
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			code := string([]rune{a, b})
			c, err := party.ParseCountry("address.country", code)
			if err != nil {
				continue
			}
			n++
			require.Equal(t, party.Country(code), c)
			r, err := language.ParseRegion(code)
			require.NoError(t, err, code)
			require.True(t, r.IsCountry(), "%s: CLDR knows every assigned code as a country", code)
		}
	}
	require.Equal(t, 249, n)

	for in, want := range map[string]party.Country{"de": "DE", " gb ": "GB", "Fr": "FR", "AX": "AX", "XK": ""} {
		c, err := party.ParseCountry("address.country", in)
		if want == "" {
			require.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, c)
	}
	for _, tc := range []struct{ in, want string }{
		{"UK", "the United Kingdom is GB, not UK"},
		{"uk", "the United Kingdom is GB, not UK"},
		{"EL", "Greece is GR (EL is its VAT prefix only)"},
		{"", `such as DE, FR or GB, not ""`},
		{"DEU", `not "DEU"`},
		{"Germany", `not "Germany"`},
		{"\u0131t", `not "ıt"`}, // dotless i: no IT
		{"EU", `not "EU"`},
		{"ZZ", `not "ZZ"`},
		{strings.Repeat("x", 100), `not "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."`},
	} {
		_, err := party.ParseCountry("address.country", tc.in)
		refusedField(t, err, "address.country", tc.want)
	}
}

// fields returns field → message of errs.
func fields(errs []problem.FieldError) map[string]string {
	m := map[string]string{}
	for _, e := range errs {
		m[e.Field] = e.Message
	}
	return m
}

func TestAddressCheck(t *testing.T) {
	t.Parallel()
	a, bad := party.Address{Lines: []string{" Hauptstraße 5 ", "Hinterhaus"}, Postcode: " 10115", City: "Berlin ", Subdivision: "Berlin", Country: "de"}.Check("address")
	require.Empty(t, bad)
	require.Equal(t, party.Address{Lines: []string{"Hauptstraße 5", "Hinterhaus"}, Postcode: "10115", City: "Berlin", Subdivision: "Berlin", Country: "DE"}, a)

	empty, bad := party.Address{}.Check("address")
	require.Empty(t, bad, "an empty address is a shape, not an error: whoever needs one says so")
	require.True(t, empty.IsZero())
	require.NotNil(t, empty.Lines, "lines is [] in JSON, never null")

	long := strings.Repeat("ä", party.MaxLine+1)
	_, bad = party.Address{
		Lines:       []string{"ok", " ", "Rue\u202eEvil"},
		Postcode:    strings.Repeat("1", party.MaxPostcode+1),
		City:        long,
		Subdivision: "Bavaria\nMunich",
		Country:     "Deutschland",
	}.Check("customer.address")
	require.Equal(t, map[string]string{
		"customer.address.lines[1]":    "must not be empty",
		"customer.address.lines[2]":    "must not contain bidirectional control characters (such as U+202E RIGHT-TO-LEFT OVERRIDE), which reorder what is shown",
		"customer.address.postcode":    "must be at most 16 characters",
		"customer.address.city":        "must be at most 100 characters",
		"customer.address.subdivision": "must not contain control characters or line breaks",
		"customer.address.country":     `must be an ISO 3166-1 alpha-2 country code such as DE, FR or GB, not "Deutschland"`,
	}, fields(bad))

	_, bad = party.Address{Lines: []string{"1", "2", "3", "4"}, City: "\xff"}.Check("address")
	require.Equal(t, map[string]string{
		"address.lines": "must be at most 3 street lines, not 4",
		"address.city":  "must be valid UTF-8",
	}, fields(bad))
	_, bad = party.Address{City: strings.Repeat("ä", party.MaxLine)}.Check("address")
	require.Empty(t, bad, "the limit counts characters, not bytes")
}

func TestContactCheck(t *testing.T) {
	t.Parallel()
	c, bad := party.Contact{Name: " Ada Lovelace ", Phone: " +49 (30) 123-456/7 ", Email: " billing@example.com "}.Check("contact")
	require.Empty(t, bad)
	require.Equal(t, party.Contact{Name: "Ada Lovelace", Phone: "+49 (30) 123-456/7", Email: "billing@example.com"}, c)
	_, bad = party.Contact{}.Check("contact")
	require.Empty(t, bad)

	for _, tc := range []struct {
		in    party.Contact
		field string
		want  string
	}{
		{party.Contact{Name: "\u200b"}, "contact.name", "must show at least one letter"},
		{party.Contact{Name: strings.Repeat("n", party.MaxName+1)}, "contact.name", "at most 200 characters"},
		{party.Contact{Phone: "call me"}, "contact.phone", "must be a telephone number"},
		{party.Contact{Phone: "++49 30"}, "contact.phone", "must be a telephone number"},
		{party.Contact{Phone: "+ -"}, "contact.phone", "must be a telephone number"},
		{party.Contact{Phone: "+49 " + strings.Repeat("1", 30)}, "contact.phone", "at most 32 characters"},
		{party.Contact{Email: "Ada<ada@example.com>"}, "contact.email", "must be an email address"},
		{party.Contact{Email: "ada@@example.com"}, "contact.email", "must be an email address"},
		{party.Contact{Email: "ada@exa\u200bmple.com"}, "contact.email", "must not contain spaces or invisible characters"},
		{party.Contact{Email: strings.Repeat("a", 250) + "@example.com"}, "contact.email", "must be an email address"},
	} {
		_, bad := tc.in.Check("contact")
		require.Len(t, bad, 1, "%+v", tc.in)
		require.Equal(t, tc.field, bad[0].Field)
		require.Contains(t, bad[0].Message, tc.want)
	}
}

func TestBankAccountCheck(t *testing.T) {
	t.Parallel()
	b, bad := party.BankAccount{IBAN: "de89 3704 0044 0532 0130 00", BIC: "cobadeffxxx"}.Check("bank_accounts[0]")
	require.Empty(t, bad)
	require.Equal(t, party.BankAccount{IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}, b)
	b, bad = party.BankAccount{IBAN: "NL91ABNA0417164300", BIC: " "}.Check("bank_accounts[0]")
	require.Empty(t, bad, "the BIC is optional")
	require.Equal(t, party.BankAccount{IBAN: "NL91ABNA0417164300"}, b)

	_, bad = party.BankAccount{IBAN: "DE88370400440532013000", BIC: "COBADEF"}.Check("bank_accounts[2]")
	require.Equal(t, []string{"bank_accounts[2].iban", "bank_accounts[2].bic"}, []string{bad[0].Field, bad[1].Field})
	_, bad = party.BankAccount{}.Check("bank_accounts[0]")
	require.Len(t, bad, 1)
	require.Equal(t, "bank_accounts[0].iban", bad[0].Field, "the IBAN is required")
}

func TestJoin(t *testing.T) {
	t.Parallel()
	require.NoError(t, party.Join(nil, []problem.FieldError{}))
	err := party.Join([]problem.FieldError{{Field: "a", Message: "x"}}, nil, []problem.FieldError{{Field: "b", Message: "y"}})
	pe, ok := problem.As(err)
	require.True(t, ok)
	require.Equal(t, 422, pe.Status)
	require.Equal(t, []problem.FieldError{{Field: "a", Message: "x"}, {Field: "b", Message: "y"}}, pe.Errors)
}
