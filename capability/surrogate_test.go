package capability_test

import (
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// A lone UTF-16 surrogate escape is not I-JSON (RFC 7493 §2.1) and RFC
// 8785 refuses it. encoding/json would read "\ud800" as U+FFFD, so two
// different inputs would share one effective input and one hash: Prepare
// refuses it with 422, and a real U+FFFD or a proper surrogate pair passes.
func TestPrepareRefusesALoneSurrogate(t *testing.T) {
	t.Parallel()
	r, _ := setup(t)
	const pre = `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","lines":[{"description":"`
	_, err := r.Prepare("get-thing", json.RawMessage(pre+`\ud800"}]}`))
	p, ok := problem.As(err)
	require.True(t, ok, "typed problem: %v", err)
	require.Equal(t, problem.CodeValidation, p.Code)
	for _, ok := range []string{`\ufffd`, `\ud83d\ude00`} {
		_, err := r.Prepare("get-thing", json.RawMessage(pre+ok+`"}]}`))
		require.NoError(t, err, ok)
	}
}
