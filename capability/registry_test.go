package capability_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

const schema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["invoice_id"],
  "properties": {
    "invoice_id": {"type": "string", "format": "uuid"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
    "lines": {"type": "array", "items": {"type": "object", "additionalProperties": false,
      "properties": {"quantity": {"type": "integer", "minimum": 1, "default": 1}, "description": {"type": "string"}}}}
  }
}`

func setup(t testing.TB) (*capability.Registry, *[]capability.Call) {
	t.Helper()
	var calls []capability.Call
	r := capability.NewRegistry()
	r.MustRegister(capability.Capability{
		Descriptor: capability.Descriptor{Name: "get-thing", Description: "Gets a thing.", InputSchema: json.RawMessage(schema), Risk: capability.RiskRead},
		Handler: func(ctx context.Context, call capability.Call) (any, error) {
			calls = append(calls, call)
			return map[string]string{"ok": "yes"}, nil
		},
	})
	return r, &calls
}

func TestPrepareAppliesDefaultsAndCanonicalises(t *testing.T) {
	t.Parallel()
	r, _ := setup(t)
	a, err := r.Prepare("get-thing", json.RawMessage(`{"lines":[{"description":"x"}], "invoice_id":"0190a5a0-0000-7000-8000-000000000001"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","limit":20,"lines":[{"description":"x","quantity":1}]}`, string(a.Input))
	require.Equal(t, `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","limit":20,"lines":[{"description":"x","quantity":1}]}`, string(a.Input), "canonical: sorted keys, no whitespace")

	b, err := r.Prepare("get-thing", json.RawMessage(`{"limit": 20, "invoice_id":"0190a5a0-0000-7000-8000-000000000001", "lines":[{"quantity":1,"description":"x"}]}`))
	require.NoError(t, err)
	require.Equal(t, a.InputHash, b.InputHash, "explicit defaults and reordered keys give the same effective input")

	upper, err := r.Prepare("get-thing", json.RawMessage(`{"invoice_id":"0190A5A0-0000-7000-8000-000000000001","lines":[{"description":"x"}]}`))
	require.NoError(t, err)
	require.Equal(t, a.InputHash, upper.InputHash, "a UUID spelled in capitals is the same target, so the same approval")

	c, err := r.Prepare("get-thing", json.RawMessage(`{"limit": 21, "invoice_id":"0190a5a0-0000-7000-8000-000000000001", "lines":[{"quantity":1,"description":"x"}]}`))
	require.NoError(t, err)
	require.NotEqual(t, a.InputHash, c.InputHash)
}

func TestPrepareRefusesBadInput(t *testing.T) {
	t.Parallel()
	r, calls := setup(t)
	cases := map[string]struct {
		in    string
		field string
	}{
		"unknown field":  {`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","bogus":1}`, "bogus"},
		"wrong type":     {`{"invoice_id":5}`, "invoice_id"},
		"not a uuid":     {`{"invoice_id":"nope"}`, "invoice_id"},
		"missing":        {`{}`, "invoice_id"},
		"below minimum":  {`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","lines":[{"quantity":0}]}`, "lines.0.quantity"},
		"unsafe integer": {`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","limit":1e300}`, "limit"},
		"invalid utf8":   {"{\"invoice_id\":\"0190a5a0-0000-7000-8000-000000000001\",\"lines\":[{\"description\":\"\xff\"}]}", "lines.0.description"},
		"nested unknown": {`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","lines":[{"x":1}]}`, "lines.0.x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := r.Prepare("get-thing", json.RawMessage(tc.in))
			p, ok := problem.As(err)
			require.True(t, ok, "typed problem: %v", err)
			require.Equal(t, problem.CodeValidation, p.Code, p.Error())
			var fields []string
			for _, f := range p.Errors {
				fields = append(fields, f.Field)
			}
			require.Contains(t, fields, tc.field)
		})
	}
	_, err := r.Prepare("no-such", nil)
	require.True(t, problem.HasCode(err, capability.CodeUnknownCapability))
	require.Empty(t, *calls, "nothing ran")
}

func TestInvokeRunsHandlerWithEffectiveInput(t *testing.T) {
	t.Parallel()
	r, calls := setup(t)
	call, err := r.Prepare("get-thing", json.RawMessage(`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001"}`))
	require.NoError(t, err)
	out, err := r.Invoke(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"ok": "yes"}, out)
	require.Len(t, *calls, 1)
	require.JSONEq(t, `{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","limit":20}`, string((*calls)[0].Input))
}

// The "email" format is the validator's own after text.Address: an
// address that reorders what is shown or holds an invisible character is
// refused with the text rule's message alone (the refused address is not
// repeated), one the validator refuses keeps its message, naming the
// field either way.
func TestPrepareEmailFormat(t *testing.T) {
	t.Parallel()
	r := capability.NewRegistry()
	r.MustRegister(capability.Capability{
		Descriptor: capability.Descriptor{Name: "mail-thing", Description: "Mails a thing.", Risk: capability.RiskRead,
			InputSchema: json.RawMessage(`{"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}`)},
		Handler: func(ctx context.Context, call capability.Call) (any, error) { return nil, nil },
	})
	for in, want := range map[string]string{
		"\"\u202eevil\"@example.com": "must not contain bidirectional control characters",
		"\"a\u200bb\"@example.com":   "must not contain spaces or invisible characters",
		"\"a\u0007\"@example.com":    "must not contain control characters",
		"not-an-email":               "is not valid email: missing @",
	} {
		raw, err := json.Marshal(map[string]string{"email": in})
		require.NoError(t, err)
		_, err = r.Prepare("mail-thing", raw)
		pe, ok := problem.As(err)
		require.True(t, ok, "%+q: %v", in, err)
		require.Len(t, pe.Errors, 1)
		require.Equal(t, "email", pe.Errors[0].Field)
		require.Contains(t, pe.Errors[0].Message, want, "%+q", in)
		if want != "is not valid email: missing @" {
			require.NotContains(t, pe.Errors[0].Message, "example.com", "the address is not repeated")
		}
	}
	for _, in := range []string{"ada@example.com", `"ada"@example.com`, "o'brien+x@example.co.uk"} {
		raw, err := json.Marshal(map[string]string{"email": in})
		require.NoError(t, err)
		_, err = r.Prepare("mail-thing", raw)
		require.NoError(t, err, in)
	}
}
