package jsondoc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/stretchr/testify/require"
)

func TestEqualComparesValuesAsAJavaScriptClientReadsThem(t *testing.T) {
	t.Parallel()
	huge := "1" + strings.Repeat("0", 400) // how jsonb stores 1e400
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"a":1.50,"b":[1,2]}`, ` {"b":[1, 2],"a":1.5}`, true},
		{`100`, `1e2`, true},
		{`1e400`, huge, true},
		{`-1e400`, huge, false},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`1`, `1 ]`, false},
		{`1`, `1 2`, false},
		{`null`, ``, true},
	} {
		require.Equal(t, tc.same, jsondoc.Equal(json.RawMessage(tc.a), json.RawMessage(tc.b)), "%s vs %s", tc.a, tc.b)
	}
}
