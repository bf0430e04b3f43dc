package document

import (
	"reflect"
	"testing"

	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/units"
	"github.com/invoiced/invoiced/vat"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
)

// Every word a document prints of its own in each language — labels,
// CLDR's month names and interval dashes, the VAT categories' names and
// wording, the common units' names, the separators x/text gives — has a
// glyph in both embedded fonts: a newer CLDR that brought a thin space
// (U+2009, which the Go fonts lack) into a date interval would fail here,
// not draw a box.
func TestEveryWordOfEachLanguageHasAGlyph(t *testing.T) {
	t.Parallel()
	var words []string
	for _, l := range Languages() {
		loc := l.locale()
		v := reflect.ValueOf(*loc.text)
		for i := range v.NumField() {
			s := v.Field(i).String()
			require.NotEmpty(t, s, "%s has no %s", l, v.Type().Field(i).Name)
			words = append(words, s)
		}
		words = append(words, loc.cal.long, loc.cal.days, loc.cal.monthsDiffer, loc.cal.yearsDiffer, loc.decimal, loc.minus,
			l.Amount(-123456789, "EUR"), l.Percent(825))
		words = append(words, loc.cal.months[:]...)
		for _, c := range vat.Categories() {
			words = append(words, c.Name(string(l)), vat.Wording(c, string(l)))
		}
		for _, u := range units.Common() {
			words = append(words, l.Unit(u, quantity.One), l.Unit(u, 2*quantity.One))
		}
	}
	for name, ttf := range map[string][]byte{"regular": goregular.TTF, "bold": gobold.TTF} {
		f, err := sfnt.Parse(ttf)
		require.NoError(t, err, name)
		var buf sfnt.Buffer
		for _, w := range words {
			for _, r := range w {
				g, err := f.GlyphIndex(&buf, r)
				require.NoError(t, err)
				require.NotZero(t, g, "%s lacks %q (%U) of %q", name, r, r, w)
			}
		}
	}
}
