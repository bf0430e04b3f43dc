package jsondoc_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/stretchr/testify/require"
)

// Each rule names the first value in document order that breaks it, by
// its field path; a clean document breaks none.
func TestParseNamesTheFieldOfEachRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		rule      jsondoc.Rule
		path      string
	}{
		{"invalid UTF-8", "{\"lines\":[{\"description\":\"ok\"},{\"description\":\"\xff\"}]}", jsondoc.InvalidUTF8, "lines.1.description"},
		{"invalid UTF-8 in a name", "{\"a\":{\"\xfe\":1}}", jsondoc.InvalidUTF8, "a.\ufffd"},
		{"NUL", `{"memo":"a\u0000b"}`, jsondoc.NUL, "memo"},
		{"NUL in a name", `{"a":[{"\u0000":1}]}`, jsondoc.NUL, "a.0.\x00"},
		{"NUL at the top", `"\u0000"`, jsondoc.NUL, ""},
		{"duplicate", `{"a":1,"b":{"c":1,"c":2},"a":2}`, jsondoc.DuplicateKey, "b.c"},
		{"duplicate at the top", `{"a":1,"a":1}`, jsondoc.DuplicateKey, "a"},
		{"unsafe integer", `{"n":[1,9007199254740992]}`, jsondoc.UnsafeNumber, "n.1"},
		{"unsafe fraction", `{"n":9007199254740991.4}`, jsondoc.UnsafeNumber, "n"},
		{"unsafe exponent", `{"n":1e300}`, jsondoc.UnsafeNumber, "n"},
		{"lone high surrogate", `{"s":"\ud800"}`, jsondoc.LoneSurrogate, "s"},
		{"lone low surrogate", `{"s":"a\udc00b"}`, jsondoc.LoneSurrogate, "s"},
		{"high surrogate before another escape", `{"s":"\ud800\u0041"}`, jsondoc.LoneSurrogate, "s"},
		{"out of range", `{"a":true,"z":-1e400}`, jsondoc.OutOfRange, "z"},
		{"inexact", `{"data":{"n":3.00000000000000000001}}`, jsondoc.Inexact, "data.n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := jsondoc.Parse([]byte(tc.doc))
			require.NoError(t, err)
			path, ok := doc.First(tc.rule)
			require.True(t, ok, "%s breaks %s", tc.doc, tc.rule.Message())
			require.Equal(t, tc.path, path)
			f, err := jsondoc.Check([]byte(tc.doc))
			require.NoError(t, err)
			require.Equal(t, doc.Findings, f, "Check finds what Parse finds")
		})
	}
}

func TestParseOfACleanDocumentFindsNothing(t *testing.T) {
	t.Parallel()
	for _, clean := range []string{
		`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","lines":[{"description":"é \ufffd \ud83d\ude00","quantity":1}]}`,
		`"\\ud800"`, // an escaped backslash, not an escape
		`[9007199254740991,-9007199254740991,0.1,1e15,1e-400,1.5,"\u00e9"]`,
		"\"\xef\xbf\xbd\"", // a real U+FFFD is a character like any other
		`null`,
	} {
		doc, err := jsondoc.Parse([]byte(clean))
		require.NoError(t, err, clean)
		for r := range jsondoc.Inexact + 1 {
			if r == jsondoc.Inexact {
				continue // below
			}
			path, ok := doc.First(r)
			require.False(t, ok, "%s: %s at %q", clean, r.Message(), path)
		}
	}
	doc, err := jsondoc.Parse([]byte(`[0.1,1e21,9007199254740991,1E2]`))
	require.NoError(t, err)
	_, ok := doc.First(jsondoc.Inexact)
	require.False(t, ok, "spellings of the exact double are not inexact")
}

func TestParseRefusesWhatIsNotOneJSONValue(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{``, ` `, `{`, `{"a":1`, `{"a" 1}`, `[1,]`, `{"a":1,}`, `{1:2}`, `{"a":1} {}`, `1 2`, `"abc`, `nul`,
		strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001)} {
		_, err := jsondoc.Parse([]byte(bad))
		require.Error(t, err, "%.40s", bad)
		_, err = jsondoc.Check([]byte(bad))
		require.Error(t, err, "%.40s", bad)
	}
	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)
	_, err := jsondoc.Parse([]byte(deep))
	require.NoError(t, err, "as deep as encoding/json goes")
}

// FuzzParse checks that Parse accepts what encoding/json accepts and
// decodes the same value, with the findings that value implies.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"\u0000"}],"a":2}`, `"\ud800"`, "\"\xff\"", `1e400`, `[1,`, `{"x":1}  `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := jsondoc.Parse(data)
		if (err == nil) != json.Valid(data) {
			t.Fatalf("Parse error %v, json.Valid %v: %q", err, json.Valid(data), data)
		}
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if !reflect.DeepEqual(doc.Value, want) {
			t.Fatalf("Parse decoded %#v, encoding/json %#v", doc.Value, want)
		}
		_, nul := doc.First(jsondoc.NUL)
		if _, dup := doc.First(jsondoc.DuplicateKey); !dup && hasNUL(want) != nul {
			t.Fatalf("NUL finding %v for %q", nul, data)
		}
	})
}

func hasNUL(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.ContainsRune(t, 0)
	case map[string]any:
		for k, x := range t {
			if strings.ContainsRune(k, 0) || hasNUL(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasNUL(x) {
				return true
			}
		}
	}
	return false
}
