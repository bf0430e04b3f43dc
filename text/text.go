// Package text holds the rules for text that people read before they act
// on it: a customer's name, a line's description and a user's display name
// are shown to the approver deciding on an invoice, so each must show
// something, and none may reorder what is shown around it. The rules read
// Unicode's own tables (Go's unicode package, Unicode 15.0.0), never a
// hand-made list of characters.
package text

import (
	"errors"
	"unicode"
	"unicode/utf8"
)

// Refusals, phrased to follow the name of the field they refuse.
var (
	// ErrInvalidUTF8: the bytes are not UTF-8.
	ErrInvalidUTF8 = errors.New("must be valid UTF-8")
	// ErrBlank: nothing in the text is a visible letter, digit,
	// punctuation mark or symbol (only spaces, format characters such as
	// U+200B ZERO WIDTH SPACE, combining marks alone, or fillers).
	ErrBlank = errors.New("must show at least one letter, digit, punctuation mark or symbol; spaces and invisible characters alone show nothing")
	// ErrBidi: a bidirectional control (U+202E RIGHT-TO-LEFT OVERRIDE and
	// the other 11 of Unicode's Bidi_Control) reorders the text shown
	// after it, so a reader could see other words than those stored.
	ErrBidi = errors.New("must not contain bidirectional control characters (such as U+202E RIGHT-TO-LEFT OVERRIDE), which reorder what is shown")
	// ErrControl: a control character or line break in text shown on one
	// line.
	ErrControl = errors.New("must not contain control characters or line breaks")
	// ErrProseControl: a control character other than a tab or line break
	// in free text.
	ErrProseControl = errors.New("must not contain control characters other than tabs and line breaks")
	// ErrInvisible: a space or a character that shows nothing (U+200B
	// ZERO WIDTH SPACE, U+00AD SOFT HYPHEN, a variation selector) in text
	// read and used character by character.
	ErrInvisible = errors.New("must not contain spaces or invisible characters (such as U+200B ZERO WIDTH SPACE)")
)

// Name checks text shown on one line where a reader relies on it to know
// what they decide on: a name or a description. It refuses a
// bidirectional control or a control character or line break anywhere,
// and text in which nothing is a visible letter, digit, punctuation mark
// or symbol. Known gap: U+2800 BRAILLE PATTERN BLANK is a symbol (So) no
// table marks as invisible, so it passes.
func Name(s string) error {
	if !utf8.ValidString(s) {
		return ErrInvalidUTF8
	}
	visible := false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Bidi_Control, r):
			return ErrBidi
		case unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp):
			return ErrControl
		case shows(r):
			visible = true
		}
	}
	if !visible {
		return ErrBlank
	}
	return nil
}

// Prose checks free text a reader is shown (a memo, a reason): it may be
// empty and may break lines, but a bidirectional control or any other
// control character is refused anywhere in it.
func Prose(s string) error {
	if !utf8.ValidString(s) {
		return ErrInvalidUTF8
	}
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Bidi_Control, r):
			return ErrBidi
		case unicode.Is(unicode.Cc, r) && !unicode.Is(unicode.White_Space, r):
			return ErrProseControl
		}
	}
	return nil
}

// Address checks text a reader compares and a machine uses character by
// character: an email address. Every character must show something
// (shows) or be a combining mark on one that does; a bidirectional
// control, a control character or line break, a space, or a character
// that shows nothing (a format character such as U+200B ZERO WIDTH SPACE
// or U+200D ZERO WIDTH JOINER, a private-use or unassigned code point, a
// variation selector or another that Unicode marks ignorable) is refused
// anywhere in it: what a reader sees, or copies, would not be what mail
// is sent to. Empty text passes; whoever needs some says so.
func Address(s string) error {
	if !utf8.ValidString(s) {
		return ErrInvalidUTF8
	}
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Bidi_Control, r):
			return ErrBidi
		case unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp):
			return ErrControl
		case !shows(r) && !marks(r):
			return ErrInvisible
		}
	}
	return nil
}

// Shows reports whether something in s shows: a visible letter, digit,
// punctuation mark or symbol (what Name asks of a name, and a deny
// reason must hold).
func Shows(s string) bool {
	for _, r := range s {
		if shows(r) {
			return true
		}
	}
	return false
}

// marks reports whether r is a combining mark that draws (on the
// character before it): Unicode's marks but for the variation selectors
// and the other ignorable ones (U+034F COMBINING GRAPHEME JOINER).
func marks(r rune) bool {
	return unicode.Is(unicode.M, r) && !unicode.Is(unicode.Variation_Selector, r) &&
		!unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// shows reports whether r draws something: a letter, digit, punctuation
// mark or symbol that Unicode does not mark as ignorable (the Hangul
// fillers U+115F, U+1160 and U+3164 are letters that draw nothing).
func shows(r rune) bool {
	return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) &&
		!unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}
