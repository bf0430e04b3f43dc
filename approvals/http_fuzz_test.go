package approvals

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// FuzzQueryParams: the inbox's query decoding never panics, accepts only
// waits within [0, MaxWait], refuses everything else with a 422 problem,
// and round-trips every cursor it issues.
func FuzzQueryParams(f *testing.F) {
	for _, s := range []string{"", "30s", "60", "61s", "-1s", "1h", "9999999999999999999", "0.5s", "AZO3XmbTdwGl1JjKK2u7Wg"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseWait(s)
		if err != nil {
			if pe, ok := problem.As(err); !ok || pe.Status != 422 {
				t.Fatalf("parseWait(%q): not a 422 problem: %v", s, err)
			}
		} else if d < 0 || d > MaxWait || (s == "" && d != 0) {
			t.Fatalf("parseWait(%q) = %s", s, d)
		}
		id, err := decodeCursor(s)
		if err != nil {
			if pe, ok := problem.As(err); !ok || pe.Status != 422 {
				t.Fatalf("decodeCursor(%q): not a 422 problem: %v", s, err)
			}
			return
		}
		if again, err := decodeCursor(encodeCursor(id)); err != nil || again != id {
			t.Fatalf("cursor round trip of %s: %v, %v", id, again, err)
		}
	})
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	id := uuid.Must(uuid.NewV7())
	got, err := decodeCursor(encodeCursor(id))
	require.NoError(t, err)
	require.Equal(t, id, got)
	d, err := parseWait("30")
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, d)
	d, err = parseWait("1m")
	require.NoError(t, err)
	require.Equal(t, MaxWait, d)
}
