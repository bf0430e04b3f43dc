package approvals

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// FuzzParseWait: the long poll's ?wait= never panics, accepts only waits
// within [0, MaxWait] and refuses everything else with a 422 problem.
func FuzzParseWait(f *testing.F) {
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
	})
}

func TestParseWait(t *testing.T) {
	t.Parallel()
	d, err := parseWait("30")
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, d)
	d, err = parseWait("1m")
	require.NoError(t, err)
	require.Equal(t, MaxWait, d)
}
