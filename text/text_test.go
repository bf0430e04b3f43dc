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
