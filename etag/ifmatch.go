package etag

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/problem"
)

// CodeVersionMismatch is the 412 problem code of an If-Match that names no
// current version.
const CodeVersionMismatch = "VERSION_MISMATCH"

// CodeIfMatchInvalid is the 400 problem code of an If-Match header that is
// neither "*" nor a list of entity tags.
const CodeIfMatchInvalid = "IF_MATCH_INVALID"

// IfMatch is a request's If-Match precondition (RFC 9110 §13.1.1) on a
// resource whose ETag is its version (FromVersion). The zero value is
// none: the header absent, or "*", which any current representation
// matches (a resource that does not exist is the 404 answered before
// preconditions are checked).
type IfMatch struct {
	// listed: the header listed entity tags, and only versions match.
	listed bool
	// versions are the listed strong tags that name a version; a weak
	// tag or another strong one can never match.
	versions []int64
	// weak are the versions the listed weak tags name, kept to say why
	// they did not match.
	weak []string
}

// MatchVersion is the precondition `If-Match: "v"`, for a caller that
// holds one version (the CLI, tests); 0 is none.
func MatchVersion(v int64) IfMatch {
	if v == 0 {
		return IfMatch{}
	}
	return IfMatch{listed: true, versions: []int64{v}}
}

// ReadIfMatch reads a request's If-Match header, all its field lines as
// one list (RFC 9110 §5.3): reading the first line only would refuse a
// tag another line names.
func ReadIfMatch(h http.Header) (IfMatch, error) {
	return ParseIfMatch(fieldLines(h, "If-Match"))
}

// ParseIfMatch reads an If-Match header value: "*" or a comma-separated
// list of entity tags (`"3"`, `W/"3"`), as RFC 9110 §8.8.3 spells them.
// Anything else, such as a bare 3 or "*" inside a list, is 400
// IF_MATCH_INVALID: the client meant something the server cannot read.
func ParseIfMatch(h string) (IfMatch, error) {
	if h = strings.Trim(h, " \t"); h == "" {
		return IfMatch{}, nil
	}
	tags, star, ok := parseList(h)
	switch {
	case !ok:
		return IfMatch{}, invalidIfMatch(h)
	case star:
		return IfMatch{}, nil
	}
	m := IfMatch{listed: true}
	for _, t := range tags {
		if t.weak {
			m.weak = append(m.weak, t.opaque)
			continue
		}
		// Strong comparison is byte for byte: "03" is not the "3" sent.
		if v, err := strconv.ParseInt(t.opaque, 10, 64); err == nil && v > 0 && strconv.FormatInt(v, 10) == t.opaque {
			m.versions = append(m.versions, v)
		}
	}
	return m, nil
}

func invalidIfMatch(h string) error {
	if len(h) > 80 {
		h = h[:77] + "..."
	}
	return problem.BadRequest(CodeIfMatchInvalid, fmt.Sprintf(
		"If-Match %q is neither * nor a list of entity tags: send the ETag a response carried, quotes included (If-Match: \"3\")", h))
}

// CheckIfMatch honours m on a resource at version current: a list naming
// another version is 412 VERSION_MISMATCH naming the current one. Tags are
// compared strongly (RFC 9110 §13.1.1), so a weak tag never matches; the
// refusal says so when one was sent.
func CheckIfMatch(m IfMatch, current int64) error {
	if !m.listed || slices.Contains(m.versions, current) {
		return nil
	}
	detail := fmt.Sprintf("the resource is at version %d; fetch it again and retry with its ETag", current)
	if slices.Contains(m.weak, strconv.FormatInt(current, 10)) {
		// A proxy that compresses responses may have weakened the ETag.
		detail = fmt.Sprintf("If-Match compares entity tags strongly (RFC 9110 §13.1.1), so W/%[1]s never matches: "+
			"send %[1]s, the ETag without W/", FromVersion(current))
	}
	return problem.New(http.StatusPreconditionFailed, CodeVersionMismatch, detail).With("current_version", current)
}
