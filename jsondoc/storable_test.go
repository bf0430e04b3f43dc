package jsondoc_test

import (
	"testing"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/stretchr/testify/require"
)

func TestUnstorableNamesWhatPostgresWouldRefuse(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`{"a":"x"}`:                       "",
		`{"a":"\ud83d\ude00","b":1e-400}`: "",
		`"\\ud800"`:                       "", // an escaped backslash, not an escape
		`{"a":"\u0000"}`:                  "NUL",
		`{"\u0000":1}`:                    "NUL",
		`"\ud800"`:                        "surrogate",
		`"\udfff"`:                        "surrogate",
		`"\ud800x"`:                       "surrogate",
		`"\ud800\ud800"`:                  "surrogate",
		"\"\xff\"":                        "UTF-8",
		`[1e309]`:                         "1.8e308",
		`{"a":1,"a":2}`:                   "", // jsonb keeps the last member
		`not json`:                        "",
	} {
		got := jsondoc.Unstorable([]byte(raw))
		if want == "" {
			require.Empty(t, got, raw)
		} else {
			require.Contains(t, got, want, raw)
		}
	}
}

func TestStorableTextReplacesWhatPostgresRefuses(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a\ufffdb\ufffdc é", jsondoc.StorableText("a\x00b\xffc é"))
	require.Equal(t, "plain", jsondoc.StorableText("plain"))
}

func TestUnstorableTextNamesItsRule(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]jsondoc.Rule{"a\x00b": jsondoc.NUL, "a\xffb\x00": jsondoc.InvalidUTF8} {
		got, bad := jsondoc.UnstorableText(s)
		require.True(t, bad, "%q", s)
		require.Equal(t, want, got, "%q", s)
	}
	_, bad := jsondoc.UnstorableText("é \ufffd")
	require.False(t, bad)
}
