package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/etag"
	"github.com/stretchr/testify/require"
)

// TestIfMatchOverHTTP: If-Match as RFC 9110 §13.1.1 has it, on a route of
// its own (PATCH /v1/users/{id}) and on one that runs a capability (PATCH
// /v1/invoices/{id}): a list holds when any member is the current ETag,
// "*" holds for any version, a weak tag never holds (412 saying so), and
// a header that is no list of tags (a bare 3) is 400 IF_MATCH_INVALID;
// a header sent as several field lines is read as one list.
// Every refusal leaves the row at its version; every match moves it on.
func TestIfMatchOverHTTP(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	user := g.userID(t, "bob")
	invoice := g.draft(t).ID.String()
	for _, r := range []struct {
		name, path, token, table string
		body                     func(n int) map[string]any
	}{
		{"user", "/v1/users/" + user, g.adminTok, "users",
			func(n int) map[string]any { return map[string]any{"display_name": fmt.Sprintf("Bob %d", n)} }},
		{"invoice", "/v1/invoices/" + invoice, g.clerkTok, "invoices",
			func(n int) map[string]any { return map[string]any{"memo": fmt.Sprintf("memo %d", n)} }},
	} {
		id := user
		if r.table == "invoices" {
			id = invoice
		}
		version := func() int { return g.count(t, `SELECT version FROM `+r.table+` WHERE id = $1`, id) }
		for n, tc := range []struct {
			name   string
			header func(v int) string
			status int
			code   string
			detail string
		}{
			{"the current ETag", func(v int) string { return fmt.Sprintf(`"%d"`, v) }, 200, "", ""},
			{"a list holding it", func(v int) string { return fmt.Sprintf(`"%d", "%d"`, v+5, v) }, 200, "", ""},
			{"a list with empty elements", func(v int) string { return fmt.Sprintf(`, "x" ,, "%d",`, v) }, 200, "", ""},
			{"*", func(int) string { return "*" }, 200, "", ""},
			{"an older ETag", func(v int) string { return fmt.Sprintf(`"%d"`, v-1) }, 412, etag.CodeVersionMismatch, "fetch it again"},
			{"a list without it", func(v int) string { return fmt.Sprintf(`"%d", "%d"`, v-1, v+1) }, 412, etag.CodeVersionMismatch, "fetch it again"},
			{"a weak ETag", func(v int) string { return fmt.Sprintf(`W/"%d"`, v) }, 412, etag.CodeVersionMismatch, "never matches"},
			{"another tag", func(int) string { return `"abc"` }, 412, etag.CodeVersionMismatch, ""},
			{"a bare version", func(v int) string { return fmt.Sprint(v) }, 400, etag.CodeIfMatchInvalid, "quotes included"},
			{"a bare weak version", func(v int) string { return fmt.Sprintf("W/%d", v) }, 400, etag.CodeIfMatchInvalid, ""},
			{"* in a list", func(v int) string { return fmt.Sprintf(`"%d", *`, v) }, 400, etag.CodeIfMatchInvalid, ""},
			{"unterminated", func(v int) string { return fmt.Sprintf(`"%d`, v) }, 400, etag.CodeIfMatchInvalid, ""},
			// Field lines, one per "\n": together they are one list.
			{"a second field line holding it", func(v int) string { return fmt.Sprintf("\"%d\"\n\"%d\"", v+5, v) }, 200, "", ""},
			{"field lines without it", func(v int) string { return fmt.Sprintf("\"%d\"\n\"%d\"", v-1, v+1) }, 412, etag.CodeVersionMismatch, "fetch it again"},
			{"* and a tag on two lines", func(v int) string { return fmt.Sprintf("*\n\"%d\"", v) }, 400, etag.CodeIfMatchInvalid, ""},
		} {
			before := version()
			var lines []string
			for _, l := range strings.Split(tc.header(before), "\n") {
				lines = append(lines, "If-Match", l)
			}
			resp := g.h.Do(t, http.MethodPatch, r.path, r.token, r.body(n), lines...)
			require.Equal(t, tc.status, resp.StatusCode, "%s, %s: %s", r.name, tc.name, resp.Body)
			if tc.status == http.StatusOK {
				require.Equal(t, before+1, version(), "%s, %s", r.name, tc.name)
				require.Equal(t, fmt.Sprintf(`"%d"`, before+1), resp.Header.Get("ETag"), "%s, %s", r.name, tc.name)
				continue
			}
			p := resp.Problem(t)
			require.Equal(t, tc.code, p["code"], "%s, %s", r.name, tc.name)
			require.Contains(t, p["detail"], tc.detail, "%s, %s", r.name, tc.name)
			if tc.status == http.StatusPreconditionFailed {
				require.EqualValues(t, before, p["current_version"], "%s, %s", r.name, tc.name)
			}
			require.Equal(t, before, version(), "%s, %s: a refusal writes nothing", r.name, tc.name)
		}
	}
}
