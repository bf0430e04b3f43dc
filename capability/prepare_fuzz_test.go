package capability_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
)

// FuzzPrepare checks what approvals and confirmations rely on for any
// input: Prepare refuses with a typed problem, or its effective input is
// in canonical form and its hash is of those bytes.
func FuzzPrepare(f *testing.F) {
	for _, s := range []string{
		`{"invoice_id":"0190A5A0-0000-7000-8000-000000000001"}`,
		`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","limit":5,"lines":[{"description":"\u00e9\ud83d\ude00"}]}`,
		`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","invoice_id":"0190a5a0-0000-7000-8000-000000000002"}`,
		"{\"invoice_id\":\"\xff\"}", `{"invoice_id":"\u0000"}`, `{"limit":1e400}`, `[]`, `null`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := setup(t)
		call, err := r.Prepare("get-thing", json.RawMessage(data))
		if err != nil {
			if _, ok := problem.As(err); !ok {
				t.Fatalf("%q: untyped refusal %v", data, err)
			}
			return
		}
		canon, err := jsondoc.Canonical(call.Input)
		if err != nil || !bytes.Equal(canon, call.Input) {
			t.Fatalf("%q: effective input %q is not canonical (%v)", data, call.Input, err)
		}
		if call.InputHash != jsondoc.Sum(call.Input) {
			t.Fatalf("%q: the hash is not of the effective input", data)
		}
	})
}
