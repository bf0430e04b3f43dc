package text_test

import (
	"testing"

	"github.com/invoiced/invoiced/text"
	"github.com/stretchr/testify/require"
)

func TestName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want error
	}{
		// Nothing shows.
		{"", text.ErrBlank},
		{"   ", text.ErrBlank},
		{"\u00a0\u3000", text.ErrBlank}, // no-break space, ideographic space
		{"\u200b", text.ErrBlank},       // zero width space (Cf)
		{"\u00ad", text.ErrBlank},       // soft hyphen (Cf)
		{"\ufe0f", text.ErrBlank},       // variation selector (Mn)
		{"\u200d", text.ErrBlank},       // zero width joiner (Cf)
		{"\U000e0041", text.ErrBlank},   // tag latin capital A (Cf)
		{"\u0301\u0301", text.ErrBlank}, // combining acute accents alone (Mn)
		{"\u3164", text.ErrBlank},       // Hangul filler (Lo, ignorable)
		{"\u115f\u1160", text.ErrBlank}, // Hangul choseong and jungseong fillers
		{"\u2800", nil},                 // braille blank: a symbol no table marks as invisible (the known gap)
		// A bidirectional control anywhere.
		{"\u202e\u200b", text.ErrBidi},  // right-to-left override, zero width space
		{"a\u202eb", text.ErrBidi},      // an override between visible letters
		{"\u200f", text.ErrBidi},        // right-to-left mark
		{"x\u061c", text.ErrBidi},       // Arabic letter mark
		{"\u2066x\u2069", text.ErrBidi}, // left-to-right isolate … pop directional isolate
		// Control characters and line breaks.
		{"Acme\nInc", text.ErrControl},     // a line break
		{"Acme\tInc", text.ErrControl},     // a tab
		{"Acme\u2028Inc", text.ErrControl}, // line separator (Zl)
		{"Acme\x1b[31m", text.ErrControl},  // a terminal escape
		{"Acme\x00", text.ErrControl},      // NUL
		{"Acme\xff", text.ErrInvalidUTF8},  // not UTF-8
		// Names that show something, in any script.
		{"Ａcme", nil}, // fullwidth letter
		{"Müller & Søn", nil},
		{"Αθήνα", nil},
		{"محمد", nil},     // right-to-left script needs no control
		{"a\u200db", nil}, // a joiner between letters
		{"👩\u200d💻", nil}, // an emoji sequence
		{"  Acme  ", nil}, // spaces around something visible
		{"-", nil},
	} {
		// ErrorIs with a nil want asserts no error at all.
		require.ErrorIs(t, text.Name(tc.in), tc.want, "%+q", tc.in)
	}
}

func TestProse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", nil},
		{"   ", nil},
		{"Paid by transfer.\nThanks!\r\n\tRef 42", nil},
		{"محمد", nil},
		{"pay to IBAN \u202e1234", text.ErrBidi},
		{"\u2067note\u2069", text.ErrBidi},
		{"bell\x07", text.ErrProseControl},
		{"\x1b[2J", text.ErrProseControl},
		{"\x00", text.ErrProseControl},
		{"\xff", text.ErrInvalidUTF8},
	} {
		require.ErrorIs(t, text.Prose(tc.in), tc.want, "%+q", tc.in)
	}
}

func TestAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", nil},
		{"ada@example.com", nil},
		{"o'brien+invoices@example.co.uk", nil},
		{"müller@bücher.example", nil},                    // internationalised (RFC 6531)
		{"jose\u0301@example.com", nil},                   // a combining accent on its letter
		{`"ada lovelace"@example.com`, text.ErrInvisible}, // a space, quoted
		{"ada\u00a0@example.com", text.ErrInvisible},      // no-break space
		{"ada\u200b@example.com", text.ErrInvisible},      // zero width space (Cf)
		{"ad\u00ada@example.com", text.ErrInvisible},      // soft hyphen (Cf)
		{"a\u200dda@example.com", text.ErrInvisible},      // zero width joiner (Cf)
		{"ada\ufe0f@example.com", text.ErrInvisible},      // variation selector (Mn, ignorable)
		{"a\u034fda@example.com", text.ErrInvisible},      // combining grapheme joiner (Mn, ignorable)
		{"ada\u3164@example.com", text.ErrInvisible},      // Hangul filler (Lo, ignorable)
		{"ada\ue000@example.com", text.ErrInvisible},      // private use
		{"ada\U000e0041@example.com", text.ErrInvisible},  // tag latin capital A (Cf)
		{"moc.elpmaxe@ada\u202e", text.ErrBidi},           // right-to-left override
		{"\"\u2066x\u2069\"@example.com", text.ErrBidi},   // an isolate, quoted
		{"ada\u200e@example.com", text.ErrBidi},           // left-to-right mark
		{"ada@example.com\n", text.ErrControl},
		{"\"a\x07\"@example.com", text.ErrControl},
		{"ada\xff@example.com", text.ErrInvalidUTF8},
	} {
		require.ErrorIs(t, text.Address(tc.in), tc.want, "%+q", tc.in)
	}
}

func TestShows(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"": false, " \n\t": false, "\u200b\u200b": false, "\ufe0f": false, "\u3164": false,
		"no": true, " .": true, "محمد": true,
	} {
		require.Equal(t, want, text.Shows(in), "%+q", in)
	}
}
