package document_test

import (
	"math"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/stretchr/testify/require"
)

const (
	en = document.English
	de = document.German
	fr = document.French
)

// Amounts group and separate as each language does (x/text's CLDR data),
// with the currency's ISO 4217 digits: none for JPY, three for BHD. French
// groups with a no-break space.
func TestAmountsReadAsEachLanguageWritesThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		amount     int64
		currency   string
		en, de, fr string
	}{
		{1623750, "EUR", "16,237.50", "16.237,50", "16\u00a0237,50"},
		{5, "EUR", "0.05", "0,05", "0,05"},
		{-123456, "EUR", "-1,234.56", "-1.234,56", "-1\u00a0234,56"},
		{4072, "JPY", "4,072", "4.072", "4\u00a0072"},
		{1234567, "BHD", "1,234.567", "1.234,567", "1\u00a0234,567"},
		{2110, "BHD", "2.110", "2,110", "2,110"},
		{0, "USD", "0.00", "0,00", "0,00"},
		{math.MinInt64, "EUR", "-92,233,720,368,547,758.08", "-92.233.720.368.547.758,08", "-92\u00a0233\u00a0720\u00a0368\u00a0547\u00a0758,08"},
		// An unknown code shows the minor units as they are.
		{12345, "XXX", "12,345", "12.345", "12\u00a0345"},
	} {
		require.Equal(t, tc.en, en.Amount(tc.amount, tc.currency), "%d %s", tc.amount, tc.currency)
		require.Equal(t, tc.de, de.Amount(tc.amount, tc.currency), "%d %s", tc.amount, tc.currency)
		require.Equal(t, tc.fr, fr.Amount(tc.amount, tc.currency), "%d %s", tc.amount, tc.currency)
		// English is what package money shows everywhere else.
		require.Equal(t, money.Grouped(tc.amount, tc.currency), en.Amount(tc.amount, tc.currency))
	}
	require.Equal(t, "1.234,56 EUR", de.Money(123456, "EUR"))
	require.Equal(t, money.Display(123456, "EUR"), en.Money(123456, "EUR"))
	// No language is English.
	require.Equal(t, "1,234.56 EUR", document.Language("").Money(123456, "EUR"))
}

func TestRatesReadWithTheLanguagesDecimalSeparator(t *testing.T) {
	t.Parallel()
	for bps, want := range map[int64][3]string{
		1900: {"19 %", "19 %", "19 %"},
		825:  {"8.25 %", "8,25 %", "8,25 %"},
		550:  {"5.5 %", "5,5 %", "5,5 %"},
		5:    {"0.05 %", "0,05 %", "0,05 %"},
		0:    {"0 %", "0 %", "0 %"},
	} {
		require.Equal(t, want, [3]string{en.Percent(bps), de.Percent(bps), fr.Percent(bps)}, "%d bps", bps)
	}
	require.Equal(t, "8.25 %", document.Percent(825))
}

// Dates are CLDR's long dates: English as outside the United States (en_001),
// day first; every month has its name.
func TestDatesReadAsCLDRsLongDates(t *testing.T) {
	t.Parallel()
	require.Equal(t, "6 December 2026", en.Date(day(2026, 12, 6)))
	require.Equal(t, "6. Dezember 2026", de.Date(day(2026, 12, 6)))
	require.Equal(t, "6 décembre 2026", fr.Date(day(2026, 12, 6)))
	months := map[document.Language][]string{
		en: {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"},
		de: {"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"},
		fr: {"janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"},
	}
	for lang, names := range months {
		for i, name := range names {
			want := map[document.Language]string{en: "1 " + name + " 2027", de: "1. " + name + " 2027", fr: "1 " + name + " 2027"}[lang]
			require.Equal(t, want, lang.Date(day(2027, time.Month(i+1), 1)))
		}
	}
	// A year is not grouped, and the time of day is not read.
	require.Equal(t, "31 December 10000", en.Date(time.Date(10000, 12, 31, 23, 59, 0, 0, time.UTC)))
}

// A period reads as CLDR's intervals do: what the two dates share is said
// once.
func TestPeriodsSayWhatTheyShareOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		start, end time.Time
		en, de, fr string
	}{
		{day(2026, 11, 1), day(2026, 11, 30), "1–30 November 2026", "1.–30. November 2026", "1–30 novembre 2026"},
		{day(2026, 11, 15), day(2026, 12, 14), "15 November – 14 December 2026", "15. November – 14. Dezember 2026", "15 novembre – 14 décembre 2026"},
		{day(2026, 12, 15), day(2027, 1, 14), "15 December 2026 – 14 January 2027", "15. Dezember 2026 – 14. Januar 2027", "15 décembre 2026 – 14 janvier 2027"},
		{day(2026, 12, 6), day(2026, 12, 6), "6 December 2026", "6. Dezember 2026", "6 décembre 2026"},
	} {
		require.Equal(t, tc.en, en.Period(tc.start, tc.end))
		require.Equal(t, tc.de, de.Period(tc.start, tc.end))
		require.Equal(t, tc.fr, fr.Period(tc.start, tc.end))
	}
}

// Quantities and their units read in the language, singular or plural by
// its plural rules: French counts 0 to below 2 as one.
func TestQuantitiesAndUnitsReadInTheLanguage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q          quantity.Quantity
		unit       string
		en, de, fr string
	}{
		{75000, "HUR", "7.5 hours", "7,5 Stunden", "7,5 heures"},
		{quantity.One, "HUR", "1 hour", "1 Stunde", "1 heure"},
		{15000, "DAY", "1.5 days", "1,5 Tage", "1,5 jour"},
		{12345678 * quantity.One, "C62", "12,345,678 units", "12.345.678 Stück", "12\u00a0345\u00a0678 unités"},
		{quantity.One, "", "1", "1", "1"},
	} {
		for lang, want := range map[document.Language]string{en: tc.en, de: tc.de, fr: tc.fr} {
			got := lang.Quantity(tc.q)
			if u := lang.Unit(tc.unit, tc.q); u != "" {
				got += " " + u
			}
			require.Equal(t, want, got, "%s %s in %s", tc.q, tc.unit, lang)
		}
	}
}

func TestCountriesAreNamedInTheLanguage(t *testing.T) {
	t.Parallel()
	for c, want := range map[party.Country][3]string{
		"DE": {"Germany", "Deutschland", "Allemagne"},
		"GB": {"United Kingdom", "Vereinigtes Königreich", "Royaume-Uni"},
		"CH": {"Switzerland", "Schweiz", "Suisse"},
	} {
		require.Equal(t, want, [3]string{en.Country(c), de.Country(c), fr.Country(c)})
	}
}

func TestParseLanguage(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"en", "de", "fr"} {
		l, err := document.ParseLanguage(s)
		require.NoError(t, err)
		require.Equal(t, document.Language(s), l)
	}
	for _, s := range []string{"", "EN", "de-AT", "it", "english"} {
		_, err := document.ParseLanguage(s)
		require.ErrorContains(t, err, "documents are written in en, de or fr", s)
	}
}
