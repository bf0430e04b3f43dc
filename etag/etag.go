// Package etag reads and writes entity tags (RFC 9110 §8.8.3): a
// resource's version as a strong tag, the If-Match precondition a change
// is checked against (§13.1.1), and If-None-Match (§13.1.2), which a GET
// answers with 304. It imports no feature package, so a domain service, a
// capability and an HTTP handler check a precondition the same way.
package etag

import (
	"net/http"
	"strconv"
	"strings"
)

// FromVersion renders version as a strong entity tag: 3 is "3".
func FromVersion(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// tag is one entity tag of a list, its opaque part without the quotes.
type tag struct {
	weak   bool
	opaque string
}

// opaque returns the opaque part of the one entity tag s is, W/ or not.
func opaque(s string) (string, bool) {
	s = strings.TrimPrefix(s, "W/")
	if opaqueTagEnd(s) != len(s) {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// parseList reads a header value that is "*" or a comma-separated list of
// entity tags, as If-Match and If-None-Match are (RFC 9110 §13.1.1,
// §13.1.2). ok is false for anything else: "*" inside a list, a bare
// value, commas alone.
func parseList(h string) (tags []tag, star, ok bool) {
	h = strings.Trim(h, " \t")
	if h == "*" {
		return nil, true, true
	}
	for rest := h; ; {
		// Empty list elements are allowed (RFC 9110 §5.6.1.2).
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			break
		}
		weak := strings.HasPrefix(rest, "W/")
		if weak {
			rest = rest[2:]
		}
		end := opaqueTagEnd(rest)
		if end < 0 {
			return nil, false, false
		}
		tags = append(tags, tag{weak: weak, opaque: rest[1 : end-1]})
		rest = strings.TrimLeft(rest[end:], " \t")
		if rest != "" && rest[0] != ',' {
			return nil, false, false
		}
	}
	return tags, false, len(tags) > 0
}

// opaqueTagEnd returns the length of the quoted opaque-tag s starts with
// (RFC 9110 §8.8.3: DQUOTE *etagc DQUOTE, etagc being %x21 / %x23-7E /
// obs-text), or -1 when s does not start with one.
func opaqueTagEnd(s string) int {
	if !strings.HasPrefix(s, `"`) {
		return -1
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1
		case c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80:
		default:
			return -1
		}
	}
	return -1
}

// fieldLines joins a header sent as several field lines into the one list
// they are (RFC 9110 §5.3), as a client or a proxy may split it.
func fieldLines(h http.Header, name string) string {
	return strings.Join(h.Values(name), ", ")
}

// NoneMatch says whether a request's If-None-Match names current, the
// ETag of the representation a GET or HEAD would send, so that the answer
// is 304 Not Modified. The comparison is weak (RFC 9110 §13.1.2): W/"3"
// and "3" name the same representation. "*" names any. A header that is
// neither "*" nor a list of entity tags names nothing: the full answer is
// never wrong, where a 304 to a header misread would be.
func NoneMatch(h http.Header, current string) bool {
	cur, ok := opaque(current)
	if !ok {
		return false
	}
	tags, star, ok := parseList(fieldLines(h, "If-None-Match"))
	if !ok {
		return false
	}
	if star {
		return true
	}
	for _, t := range tags {
		if t.opaque == cur {
			return true
		}
	}
	return false
}
