package document_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
)

// The embedded fonts draw Latin (with the letters of Central European and
// Nordic names), Greek and Cyrillic, and the signs a document uses; other
// scripts have no glyph and draw as boxes, as docs/documents.md says. pdftotext
// would still "find" those (the text layer maps them), so coverage is
// checked in the fonts themselves.
func TestEmbeddedFontsCoverLatinGreekCyrillicOnly(t *testing.T) {
	t.Parallel()
	covered := "Müller & Søn Łódź Αθήνα Москва ÀÉÎÕÜ ßçñ ÆØÅÞð Œœ ŠŽČĆĐ ȘȚ ŐŰ ĀĒĪŪĶĻŅ ŞĞİı ΑΩαω ДЖЯЁЇЄҐЉЊЋЏ €£¥ –—“”‘’…·%№"
	// Vietnamese, Arabic, Hebrew, Han, Thai; three currency signs.
	missing := "ạơưمحדש東京ภาษา₹₽₩"
	for name, ttf := range map[string][]byte{"regular": goregular.TTF, "bold": gobold.TTF} {
		f, err := sfnt.Parse(ttf)
		require.NoError(t, err, name)
		var buf sfnt.Buffer
		for _, r := range covered {
			g, err := f.GlyphIndex(&buf, r)
			require.NoError(t, err)
			require.NotZero(t, g, "%s lacks %q", name, r)
		}
		for _, r := range missing {
			g, err := f.GlyphIndex(&buf, r)
			require.NoError(t, err)
			require.Zero(t, g, "%s has %q: docs/documents.md's list of what shows as boxes is out of date", name, r)
		}
	}
}
