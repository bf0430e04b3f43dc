package capability

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/problem"
)

// CodeVersionMismatch is the 412 problem code of an If-Match that names no
// current version (shared with the feature packages that check it).
const CodeVersionMismatch = "VERSION_MISMATCH"

// Versioned is an output that carries an optimistic-concurrency version;
// the HTTP layer sends it as the ETag.
type Versioned interface {
	ResourceVersion() int64
}

// ETag renders version as a strong entity tag.
func ETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// ParseIfMatch reads an If-Match header into a version: 0 when the header
// is absent or "*". Anything else that is not an ETag this service sent
// cannot match the current version, so it is a 412 (RFC 9110 §13.1.1).
func ParseIfMatch(h string) (int64, error) {
	h = strings.TrimSpace(h)
	if h == "" || h == "*" {
		return 0, nil
	}
	v := strings.Trim(strings.TrimPrefix(h, "W/"), `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, problem.New(http.StatusPreconditionFailed, CodeVersionMismatch,
			fmt.Sprintf("If-Match %q is not an ETag this service sent", h))
	}
	return n, nil
}

// CheckIfMatch honours an If-Match version (0: none was sent): another
// version than current is 412 VERSION_MISMATCH naming the current one.
func CheckIfMatch(ifMatch, current int64) error {
	if ifMatch != 0 && ifMatch != current {
		return problem.New(http.StatusPreconditionFailed, CodeVersionMismatch,
			fmt.Sprintf("the resource is at version %d; fetch it again and retry with its ETag", current)).
			With("current_version", current)
	}
	return nil
}
