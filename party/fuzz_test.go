package party_test

import (
	"regexp"
	"testing"

	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
)

// refusal fails t unless err is nil or a 422 naming field.
func refusal(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		return
	}
	pe, ok := problem.As(err)
	if !ok || pe.Status != 422 || len(pe.Errors) != 1 || pe.Errors[0].Field != field || pe.Errors[0].Message == "" {
		t.Fatalf("want a 422 naming %s, got %#v", field, err)
	}
}

var compactIBAN = regexp.MustCompile(`^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$`)

// Whatever the input, ParseIBAN answers an IBAN in its electronic form
// that reads back as itself, printed or not, or a refusal naming the
// field; it never panics.
func FuzzParseIBAN(f *testing.F) {
	for _, s := range registryIBANs {
		f.Add(s)
	}
	for _, s := range []string{"", " ", "de89 3704 0044 0532 0130 00", "DE89\u0131", "DE00", "ZZ", "NO9386011117947 ", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := party.ParseIBAN("iban", s)
		refusal(t, err, "iban")
		if err != nil {
			return
		}
		if !compactIBAN.MatchString(string(got)) {
			t.Fatalf("%q read as %q", s, got)
		}
		for _, again := range []string{string(got), got.String()} {
			if back, err := party.ParseIBAN("iban", again); err != nil || back != got {
				t.Fatalf("%q read as %q, which reads as %q, %v", s, got, back, err)
			}
		}
	})
}

var compactVAT = regexp.MustCompile(`^[A-Z]{2}[A-Z0-9+*]{2,14}$`)

// Whatever the input, ParseVATID answers a compact number with a known
// prefix that reads back as itself, or a refusal naming the field.
func FuzzParseVATID(f *testing.F) {
	for s := range inUse {
		f.Add(s)
	}
	for _, s := range []string{"", "GR094064321", "CHE", "CH", "NO", "IE1+23456A", "XIGD123", "\xff", "DE-1.3 6"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := party.ParseVATID("vat_id", s)
		refusal(t, err, "vat_id")
		if err != nil {
			return
		}
		if !compactVAT.MatchString(string(got)) || got.Prefix() == "" {
			t.Fatalf("%q read as %q", s, got)
		}
		if back, err := party.ParseVATID("vat_id", string(got)); err != nil || back != got {
			t.Fatalf("%q read as %q, which reads as %q, %v", s, got, back, err)
		}
	})
}

var compactBIC = regexp.MustCompile(`^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$`)

func FuzzParseBIC(f *testing.F) {
	for _, s := range []string{"DEUTDEFF", "deutdeff500", "RBKOXKPR", "DEUTZZFF", "", "DEUTDEFF5", "\u0131\u0131\u0131\u0131DEFF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := party.ParseBIC("bic", s)
		refusal(t, err, "bic")
		if err != nil {
			return
		}
		if !compactBIC.MatchString(string(got)) {
			t.Fatalf("%q read as %q", s, got)
		}
		if back, err := party.ParseBIC("bic", string(got)); err != nil || back != got {
			t.Fatalf("%q read as %q, which reads as %q, %v", s, got, back, err)
		}
	})
}

// An address that passes its check passes again unchanged.
func FuzzAddressCheck(f *testing.F) {
	f.Add("Hauptstraße 5", "", "10115", "Berlin", "", "de")
	f.Add(" ", "\u202e", "\xff", "", "\n", "UK")
	f.Fuzz(func(t *testing.T, l1, l2, postcode, city, sub, country string) {
		in := party.Address{Lines: []string{l1, l2}, Postcode: postcode, City: city, Subdivision: sub, Country: party.Country(country)}
		out, bad := in.Check("address")
		for _, e := range bad {
			if e.Field == "" || e.Message == "" {
				t.Fatalf("%+v: a refusal names its field and says why: %+v", in, e)
			}
		}
		if len(bad) > 0 {
			return
		}
		again, bad := out.Check("address")
		if len(bad) > 0 || len(again.Lines) != len(out.Lines) || again.City != out.City || again.Country != out.Country || again.Postcode != out.Postcode {
			t.Fatalf("%+v checked as %+v, then as %+v, %+v", in, out, again, bad)
		}
	})
}
