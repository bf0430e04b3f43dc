// Package party holds what an invoice says of the parties to it, the
// seller and the customer: a postal address, contact details, bank
// accounts, and the checks of their identifiers (ISO 3166-1 countries,
// IBANs and BICs, VAT identification numbers). It knows no HTTP and no
// table: a refusal is a 422 VALIDATION_FAILED naming the field by the
// path the caller gives (address.country, bank_accounts[0].iban).
package party

import (
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/text"
)

// Length limits, in characters. EN 16931 sets none; these hold what real
// addresses need with room to spare and keep a PDF's party block to a few
// lines: a street line or a city of 100 (Llanfairpwllgwyngyll… has 58), a
// postcode of 16 (the longest in use, such as Brazil's 12345-678 or a US
// ZIP+4, have 10), a name of 200 (Companies House allows 160).
const (
	MaxLine     = 100
	MaxLines    = 3
	MaxPostcode = 16
	MaxName     = 200
	MaxPhone    = 32
	MaxEmail    = 254 // RFC 5321's limit on a forward path
)

// Address is a postal address. Every field may be empty (a customer
// created before addresses were kept has none); whether an invoice needs
// one is for the caller to say.
type Address struct {
	// Lines are the street lines, 0 to 3, none empty.
	Lines       []string `json:"lines"`
	Postcode    string   `json:"postcode"`
	City        string   `json:"city"`
	Subdivision string   `json:"subdivision"`
	// Country is an ISO 3166-1 alpha-2 code, or empty.
	Country Country `json:"country"`
}

// IsZero reports whether a says nothing at all.
func (a Address) IsZero() bool {
	return len(a.Lines) == 0 && a.Postcode == "" && a.City == "" && a.Subdivision == "" && a.Country == ""
}

// Check returns a with spaces trimmed around each field, the country in
// upper case and Lines never nil, and the fields that are wrong, each
// named under at (address → address.lines[1], address.country).
func (a Address) Check(at string) (Address, []problem.FieldError) {
	var bad fieldErrors
	out := Address{Lines: []string{}}
	if len(a.Lines) > MaxLines {
		bad.add(at+".lines", "must be at most %d street lines, not %d", MaxLines, len(a.Lines))
	}
	for i, l := range a.Lines {
		if l, ok := bad.line(fmt.Sprintf("%s.lines[%d]", at, i), l, MaxLine, true); ok {
			out.Lines = append(out.Lines, l)
		}
	}
	out.Postcode, _ = bad.line(at+".postcode", a.Postcode, MaxPostcode, false)
	out.City, _ = bad.line(at+".city", a.City, MaxLine, false)
	out.Subdivision, _ = bad.line(at+".subdivision", a.Subdivision, MaxLine, false)
	if strings.TrimSpace(string(a.Country)) != "" {
		c, err := ParseCountry(at+".country", string(a.Country))
		bad.err(err)
		out.Country = c
	}
	return out, bad
}

// Contact is whom to ask about an invoice; every field may be empty.
type Contact struct {
	Name  string `json:"name"`
	Phone string `json:"phone"`
	Email string `json:"email"`
}

// phoneRE is a telephone number as it is written (E.123 and national
// forms): an optional +, then digits with spaces, dots, dashes, slashes
// and parentheses between them.
var phoneRE = regexp.MustCompile(`^\+?[0-9 ./()-]+$`)

// Check returns c trimmed and the fields that are wrong, named under at.
func (c Contact) Check(at string) (Contact, []problem.FieldError) {
	var bad fieldErrors
	var out Contact
	out.Name, _ = bad.line(at+".name", c.Name, MaxName, false)
	out.Phone = strings.TrimSpace(c.Phone)
	if out.Phone != "" {
		if len(out.Phone) > MaxPhone || !phoneRE.MatchString(out.Phone) || countDigits(out.Phone) < 3 {
			bad.add(at+".phone", "must be a telephone number of at most %d characters such as +49 30 1234567: digits, an optional leading +, and spaces, dots, dashes, slashes or parentheses", MaxPhone)
		}
	}
	out.Email = strings.TrimSpace(c.Email)
	if out.Email != "" {
		if err := checkEmail(out.Email); err != "" {
			bad.add(at+".email", "%s", err)
		}
	}
	return out, bad
}

func countDigits(s string) int {
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n++
		}
	}
	return n
}

// checkEmail says what is wrong with an email address, or "": a bare
// address (no display name), one @, at most 254 bytes, and nothing in it
// that shows nothing or reorders what is shown (text.Address).
func checkEmail(s string) string {
	if err := text.Address(s); err != nil {
		return err.Error()
	}
	a, err := mail.ParseAddress(s)
	if len(s) > MaxEmail || strings.Count(s, "@") != 1 || err != nil || a.Name != "" || a.Address != s {
		return "must be an email address such as billing@example.com"
	}
	return ""
}

// BankAccount is an account payments go to: an IBAN, and the BIC of its
// bank where a payer needs one (SEPA payments do not).
type BankAccount struct {
	IBAN IBAN `json:"iban"`
	BIC  BIC  `json:"bic"`
}

// Check returns b in its compact forms and the fields that are wrong,
// named under at (bank_accounts[0] → bank_accounts[0].iban).
func (b BankAccount) Check(at string) (BankAccount, []problem.FieldError) {
	var bad fieldErrors
	var out BankAccount
	var err error
	out.IBAN, err = ParseIBAN(at+".iban", string(b.IBAN))
	bad.err(err)
	if strings.TrimSpace(string(b.BIC)) != "" {
		out.BIC, err = ParseBIC(at+".bic", string(b.BIC))
		bad.err(err)
	}
	return out, bad
}

// Join makes one 422 VALIDATION_FAILED of field errors, or nil for none.
func Join(fields ...[]problem.FieldError) error {
	var all []problem.FieldError
	for _, f := range fields {
		all = append(all, f...)
	}
	if len(all) == 0 {
		return nil
	}
	return problem.Validation(all...)
}

// Line checks one line of text a party's record holds (a name, a tax
// number): trimmed, at most max characters, nothing in it that shows
// nothing or reorders what is shown (text.Name); required refuses an
// empty one. It returns the trimmed text and what is wrong, named field.
func Line(field, s string, max int, required bool) (string, []problem.FieldError) {
	var bad fieldErrors
	s, _ = bad.line(field, s, max, required)
	return s, bad
}

// fieldErrors collects the fields a check refuses.
type fieldErrors []problem.FieldError

func (f *fieldErrors) add(field, format string, args ...any) {
	*f = append(*f, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// err adds the field errors of a VALIDATION_FAILED err; any other error
// cannot come from a parser of this package.
func (f *fieldErrors) err(err error) {
	if pe, ok := problem.As(err); ok {
		*f = append(*f, pe.Errors...)
	} else if err != nil {
		panic(err)
	}
}

// line checks one line of text: trimmed, at most max characters, nothing
// that does not show or reorders what is shown (text.Name). required
// refuses an empty one. It returns the trimmed text and whether it
// passed.
func (f *fieldErrors) line(field, s string, max int, required bool) (string, bool) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" && required:
		f.add(field, "must not be empty")
		return s, false
	case s == "":
		return s, true
	case !utf8.ValidString(s):
		f.add(field, "%s", text.ErrInvalidUTF8)
		return s, false
	case utf8.RuneCountInString(s) > max:
		f.add(field, "must be at most %d characters", max)
		return s, false
	}
	if err := text.Name(s); err != nil {
		f.add(field, "%s", err)
		return s, false
	}
	return s, true
}
