package etag_test

import (
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/etag"
	"github.com/stretchr/testify/require"
)

// TestNoneMatchComparesWeakly: If-None-Match names the representation a
// client holds, compared weakly (RFC 9110 §13.1.2), "*" for any; a header
// that is no list of tags names nothing, so the full answer goes out.
func TestNoneMatchComparesWeakly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lines   []string
		current string
		match   bool
	}{
		{nil, `"3"`, false},
		{[]string{`"3"`}, `"3"`, true},
		{[]string{`W/"3"`}, `"3"`, true}, // weak comparison
		{[]string{`"3"`}, `W/"3"`, true},
		{[]string{`W/"3"`}, `W/"3"`, true},
		{[]string{`*`}, `"3"`, true},
		{[]string{` * `}, `"3"`, true},
		{[]string{`"1", "3"`}, `"3"`, true},
		{[]string{`, "1" ,, W/"3",`}, `"3"`, true},
		{[]string{`"1"`, `"3"`}, `"3"`, true}, // two field lines, one list
		{[]string{`"2"`}, `"3"`, false},
		{[]string{`"1", "2"`}, `"3"`, false},
		{[]string{`"03"`}, `"3"`, false}, // byte for byte, not by number
		{[]string{`"3"`}, `"30"`, false},
		{[]string{`"a,b"`}, `"a"`, false}, // the comma is inside the tag
		{[]string{`3`}, `"3"`, false},     // not a tag: names nothing
		{[]string{`"3", *`}, `"3"`, false},
		{[]string{`"3" "4"`}, `"3"`, false},
		{[]string{`,`}, `"3"`, false},
		{[]string{`w/"3"`}, `"3"`, false},
		{[]string{`""`}, `""`, true},
		{[]string{`"3"`}, ``, false}, // no ETag to compare
		{[]string{`*`}, `3`, false},
	} {
		h := http.Header{}
		for _, l := range tc.lines {
			h.Add("If-None-Match", l)
		}
		require.Equal(t, tc.match, etag.NoneMatch(h, tc.current), "If-None-Match %q against %s", tc.lines, tc.current)
	}
}

func TestFromVersion(t *testing.T) {
	t.Parallel()
	require.Equal(t, `"3"`, etag.FromVersion(3))
	require.Equal(t, `"9223372036854775807"`, etag.FromVersion(1<<63-1))
}
