package document

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/units"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

//go:generate go run ./internal/cldrgen

// Language is a language a document is written in: its labels and
// sentences (ours), and how its amounts, quantities, rates, dates, units
// and country names read (CLDR's: numbers and country names through
// golang.org/x/text, dates from calendars.go, which cldrgen generates from
// CLDR since x/text formats no dates). Its methods format as English for
// "" and for a code that is not one of Languages (which Render refuses).
type Language string

// The languages documents are written in. A Document with no Language is
// in English.
const (
	English Language = "en"
	German  Language = "de"
	French  Language = "fr"
)

// Languages returns the languages documents are written in.
func Languages() []Language { return []Language{English, German, French} }

// ParseLanguage returns the language with code s ("en", "de" or "fr"), or
// an error naming those.
func ParseLanguage(s string) (Language, error) {
	if l := Language(s); slices.Contains(Languages(), l) {
		return l, nil
	}
	return "", fmt.Errorf("documents are written in en, de or fr, not %q", s)
}

// calendar is CLDR's Gregorian calendar data for one language
// (calendars.go): the long date pattern, the wide month names, and the
// patterns of an interval whose greatest difference is in the day, the
// month or the year.
type calendar struct {
	long                            string
	months                          [12]string
	days, monthsDiffer, yearsDiffer string
}

// locale is what a language formats with.
type locale struct {
	lang    Language
	printer *message.Printer
	// decimal and minus are the separator and sign x/text prints.
	decimal, minus string
	cal            calendar
	regions        display.Namer
	text           *labels
}

var locales = func() map[Language]*locale {
	m := map[Language]*locale{}
	for _, l := range Languages() {
		tag := language.Make(string(l))
		p := message.NewPrinter(tag)
		m[l] = &locale{
			lang: l, printer: p,
			decimal: strings.TrimSuffix(strings.TrimPrefix(p.Sprint(number.Decimal(5, number.Scale(1))), p.Sprint(number.Decimal(5))), p.Sprint(number.Decimal(0))),
			minus:   strings.TrimSuffix(p.Sprint(number.Decimal(-1)), p.Sprint(number.Decimal(1))),
			cal:     calendars[l],
			regions: display.Regions(tag),
			text:    texts[l],
		}
	}
	return m
}()

// locale is l's, English's for "" and for a language documents are not
// written in (Render refuses those).
func (l Language) locale() *locale {
	if loc, ok := locales[l]; ok {
		return loc
	}
	return locales[English]
}

// Amount renders amount minor units of currency as people reading l group
// it, without the code: 1623750 USD is "16,237.50" in en, "16.237,50" in
// de and "16 237,50" (a no-break space) in fr; 4072 JPY "4,072", 2110 BHD
// "2.110" in en. The digits after the separator are the currency's ISO
// 4217 minor units (package money's table, as money.Grouped); x/text
// groups the whole part and gives the separator and the minus sign, and
// no float ever holds the amount. An unknown code shows the minor units as
// they are.
func (l Language) Amount(amount int64, currency string) string {
	loc := l.locale()
	exp, _ := money.Exponent(currency)
	// uint64 keeps math.MinInt64 representable after negation.
	u := uint64(amount)
	if amount < 0 {
		u = -u
	}
	pow := uint64(1)
	for range exp {
		pow *= 10
	}
	s := loc.printer.Sprint(number.Decimal(u / pow))
	if exp > 0 {
		s += loc.decimal + loc.printer.Sprint(number.Decimal(u%pow, number.MinIntegerDigits(exp), number.NoSeparator()))
	}
	if amount < 0 {
		s = loc.minus + s
	}
	return s
}

// Money is Amount with the currency's code after it, as ADR-0016 shows
// amounts in every language: "16.237,50 EUR".
func (l Language) Money(amount int64, currency string) string {
	return l.Amount(amount, currency) + " " + currency
}

// Percent renders a rate in basis points: 1900 is "19 %" in every
// language, 825 "8.25 %" in en and "8,25 %" in de and fr.
func (l Language) Percent(bps int64) string {
	loc := l.locale()
	u := uint64(bps)
	if bps < 0 {
		u = -u
	}
	s := loc.printer.Sprint(number.Decimal(u / 100))
	if frac := u % 100; frac != 0 {
		digits := 2
		if frac%10 == 0 {
			frac, digits = frac/10, 1
		}
		s += loc.decimal + loc.printer.Sprint(number.Decimal(frac, number.MinIntegerDigits(digits), number.NoSeparator()))
	}
	if bps < 0 {
		s = loc.minus + s
	}
	return s + " %"
}

// Date renders t's calendar date in CLDR's long form for l: "6 December
// 2026", "6. Dezember 2026", "6 décembre 2026".
func (l Language) Date(t time.Time) string {
	loc := l.locale()
	return loc.pattern(loc.cal.long, t, t)
}

// Period renders the calendar days from start to end, both included, as
// CLDR's intervals do for l: "1–30 November 2026", "1. November – 15.
// Dezember 2026", "15 décembre 2026 – 15 janvier 2027"; one day is its
// Date.
func (l Language) Period(start, end time.Time) string {
	loc := l.locale()
	sy, sm, sd := start.Date()
	ey, em, ed := end.Date()
	switch {
	case sy != ey:
		return loc.pattern(loc.cal.yearsDiffer, start, end)
	case sm != em:
		return loc.pattern(loc.cal.monthsDiffer, start, end)
	case sd != ed:
		return loc.pattern(loc.cal.days, start, end)
	}
	return l.Date(start)
}

// pattern formats a CLDR date pattern of the fields d, MMMM and y (cldrgen
// refuses others) and quoted literals. An interval's pattern names a field
// twice: from the first field seen again on, the fields are end's, as
// CLDR's interval formats say.
func (loc *locale) pattern(p string, start, end time.Time) string {
	var b strings.Builder
	seen := map[byte]bool{}
	t := start
	for i := 0; i < len(p); {
		ch := p[i]
		switch {
		case ch == '\'' && i+1 < len(p) && p[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case ch == '\'':
			j := strings.IndexByte(p[i+1:], '\'')
			if j < 0 {
				j = len(p) - i - 1
			}
			b.WriteString(p[i+1 : i+1+j])
			i += j + 2
		case ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			j := i
			for j < len(p) && p[j] == ch {
				j++
			}
			if seen[ch] {
				t = end
			}
			seen[ch] = true
			y, m, d := t.Date()
			switch ch {
			case 'd':
				b.WriteString(loc.printer.Sprint(number.Decimal(d, number.NoSeparator())))
			case 'M':
				b.WriteString(loc.cal.months[m-1])
			case 'y':
				b.WriteString(loc.printer.Sprint(number.Decimal(y, number.NoSeparator())))
			}
			i = j
		default:
			b.WriteByte(ch)
			i++
		}
	}
	return b.String()
}

// Quantity renders a line's quantity for l: "7.5" in en, "7,5" in de and
// fr (quantity.Quantity.Format).
func (l Language) Quantity(q quantity.Quantity) string {
	return q.Format(string(l.locale().lang))
}

// Unit is the name in l of the unit code (UN/ECE Recommendation 20) a
// quantity q is counted in: "hours", "Stunden", "heures" for HUR and 7.5,
// "hour" for 1 (units.Name, plural by quantity.Quantity.Plural); "" for
// no unit.
func (l Language) Unit(code string, q quantity.Quantity) string {
	if code == "" {
		return ""
	}
	lang := string(l.locale().lang)
	return units.Name(code, lang, q.Plural(lang))
}

// Country is the name of an ISO 3166-1 country in l, from CLDR through
// x/text: DE is "Germany", "Deutschland", "Allemagne". A code x/text does
// not know is shown as it is.
func (l Language) Country(c party.Country) string {
	r, err := language.ParseRegion(string(c))
	if err != nil {
		return string(c)
	}
	if name := l.locale().regions.Name(r); name != "" {
		return name
	}
	return string(c)
}
