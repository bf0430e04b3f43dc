package jsondoc

import (
	"strings"
	"unicode/utf8"
)

// Unstorable says why raw, a JSON document, cannot be stored as it is in
// a jsonb column and read back by a JavaScript client, or "" when it can:
// PostgreSQL refuses U+0000, invalid UTF-8 and lone surrogate escapes, and
// numbers beyond float64 (1e400) are ones no JavaScript client can send
// back and Go cannot compare with the stored copy. raw that is not JSON
// reports "" (it is refused elsewhere).
func Unstorable(raw []byte) string {
	f, err := Check(raw)
	if err != nil {
		return ""
	}
	for _, r := range []Rule{InvalidUTF8, LoneSurrogate, NUL, OutOfRange} {
		if _, ok := f.First(r); ok {
			return r.Message()
		}
	}
	return ""
}

// StorableText is s as PostgreSQL can store it and JSON carries it
// unchanged: U+0000 and invalid UTF-8 become U+FFFD.
func StorableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// UnstorableText returns the rule text s breaks that PostgreSQL would
// refuse (InvalidUTF8, then NUL), and whether it breaks one.
func UnstorableText(s string) (Rule, bool) {
	switch {
	case !utf8.ValidString(s):
		return InvalidUTF8, true
	case strings.IndexByte(s, 0) >= 0:
		return NUL, true
	}
	return 0, false
}
