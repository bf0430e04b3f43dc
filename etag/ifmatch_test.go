package etag_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// TestIfMatchFollowsRFC9110: If-Match is "*" or a list of entity tags,
// compared strongly, and a list holds when any member is the current
// ETag (RFC 9110 §13.1.1). A resource at version 3 sent ETag "3".
func TestIfMatchFollowsRFC9110(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header string
		match  bool
	}{
		{``, true},
		{`*`, true},
		{` * `, true},
		{`"3"`, true},
		{` "3" `, true},
		{`"1", "3"`, true},
		{`"3","1"`, true},
		{`, "1" ,, "3",`, true}, // empty list elements are allowed
		{`"x", W/"3", "3"`, true},
		{`"2"`, false},
		{`"1", "2"`, false},
		{`W/"3"`, false}, // weak: never a strong match
		{`W/"3", W/"1"`, false},
		{`"03"`, false}, // byte for byte, not by number
		{`"+3"`, false},
		{`""`, false},
		{`"0"`, false},
		{`"abc"`, false},
		{`"a,b"`, false}, // a comma inside the quotes is part of the tag
		{`"` + strings.Repeat("9", 4000) + `"`, false},
	} {
		m, err := etag.ParseIfMatch(tc.header)
		require.NoError(t, err, "%q", tc.header)
		err = etag.CheckIfMatch(m, 3)
		if tc.match {
			require.NoError(t, err, "%q", tc.header)
			continue
		}
		p, ok := problem.As(err)
		require.True(t, ok, "%q: %v", tc.header, err)
		require.Equal(t, http.StatusPreconditionFailed, p.Status, "%q", tc.header)
		require.Equal(t, etag.CodeVersionMismatch, p.Code, "%q", tc.header)
		require.EqualValues(t, 3, p.Extra["current_version"], "%q", tc.header)
	}
}

// A header that is neither "*" nor a list of entity tags is the client's
// 400, naming the header and how to send it.
func TestIfMatchMalformedIs400(t *testing.T) {
	t.Parallel()
	for _, h := range []string{
		`3`,              // bare, unquoted
		`W/3`,            // weak, unquoted
		`"3 "`,           // a space inside the quotes
		`"3`,             // unterminated
		`"3" "4"`,        // no comma between
		`"3", *`,         // * inside a list
		`*, "3"`,         // likewise
		`**`,             // not *
		`,`,              // no tag at all
		`w/"3"`,          // W/ is case-sensitive
		"\"3\x01\"",      // a control character in the tag
		`"3" ; q=1`,      // parameters are not entity tags
		`"a" garbage`,    // trailing bytes
		`W/ "3"`,         // space after W/
		`"` + "\"" + `"`, // a quote inside
	} {
		_, err := etag.ParseIfMatch(h)
		p, ok := problem.As(err)
		require.True(t, ok, "%q: %v", h, err)
		require.Equal(t, http.StatusBadRequest, p.Status, "%q", h)
		require.Equal(t, etag.CodeIfMatchInvalid, p.Code, "%q", h)
		require.Contains(t, p.Detail, "If-Match", "%q", h)
		require.Contains(t, p.Detail, "quotes included", "%q", h)
	}
}

// A weak tag of the current version says why it did not match and what
// to send instead; a stale one says to fetch the resource again.
func TestIfMatchRefusalSaysWhatToDo(t *testing.T) {
	t.Parallel()
	m, err := etag.ParseIfMatch(`W/"3"`)
	require.NoError(t, err)
	p, _ := problem.As(etag.CheckIfMatch(m, 3))
	require.Contains(t, p.Detail, `W/"3" never matches`)
	require.Contains(t, p.Detail, `send "3"`)
	p, _ = problem.As(etag.CheckIfMatch(m, 4))
	require.Contains(t, p.Detail, "at version 4; fetch it again")

	require.NoError(t, etag.CheckIfMatch(etag.IfMatch{}, 7), "no precondition")
	require.NoError(t, etag.CheckIfMatch(etag.MatchVersion(0), 7), "0 is none")
	require.NoError(t, etag.CheckIfMatch(etag.MatchVersion(7), 7))
	require.Error(t, etag.CheckIfMatch(etag.MatchVersion(6), 7))
}

// A header sent as several field lines is one list (RFC 9110 §5.3).
func TestReadIfMatchJoinsFieldLines(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Add("If-Match", `"1"`)
	h.Add("If-Match", `"3"`)
	m, err := etag.ReadIfMatch(h)
	require.NoError(t, err)
	require.NoError(t, etag.CheckIfMatch(m, 3), "the second line names the version")

	h = http.Header{}
	h.Add("If-Match", `*`)
	h.Add("If-Match", `"3"`)
	_, err = etag.ReadIfMatch(h)
	require.True(t, problem.HasCode(err, etag.CodeIfMatchInvalid), "* beside a tag is a list holding *: %v", err)
}
