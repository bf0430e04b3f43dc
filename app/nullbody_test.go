package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A JSON body of null reads as no members, as Prepare reads it: on a route
// with an id in the path it answers as an empty body does, never a 500.
func TestNullBodyOnAPathRouteIsAnEmptyBody(t *testing.T) {
	t.Parallel()
	g := setupGated(t)
	for _, r := range []struct{ method, suffix string }{
		{"POST", "/issue"},
		{"PATCH", ""},
		{"POST", "/void"},
	} {
		withNull := g.h.Do(t, r.method, "/v1/invoices/"+g.draft(t).ID.String()+r.suffix, g.clerkTok, "null")
		withEmpty := g.h.Do(t, r.method, "/v1/invoices/"+g.draft(t).ID.String()+r.suffix, g.clerkTok, "{}")
		require.Less(t, withNull.StatusCode, 500, "%s %s: %s", r.method, r.suffix, withNull.Body)
		require.Equal(t, withEmpty.StatusCode, withNull.StatusCode, "%s %s: %s", r.method, r.suffix, withNull.Body)
	}
}
