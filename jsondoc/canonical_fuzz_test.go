package jsondoc_test

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/invoiced/invoiced/jsondoc"
)

// FuzzCanonical checks the properties approvals and confirmations rely on:
// the canonical form is a fixed point, parses back to the same value, and
// any other spelling of the same value (key order, whitespace, string
// escapes, number notation) hashes the same.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `true`, `0`, `-0`, `1.0`, `1e2`, `-1.5e-7`, `123456789012345678`,
		`{"invoice_id":"0190a5a0-0000-7000-8000-000000000001","limit":20,"lines":[{"description":"x","quantity":1}]}`,
		`{"b":{"d":[1,{"z":null,"a":false}],"c":"<&>"},"a":"\u00e9\ud83d\ude00"}`,
		`{"\u0000":"\u001f","€":1,"\r":2,"aa":3,"a":4}`,
		`[1e21,1e-6,5e-324,1.7976931348623157e308,9007199254740993]`,
		"  {\"a\" :\t1 }\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		canon, err := jsondoc.Canonical(data)
		if err != nil {
			return // not JSON, or not I-JSON (duplicate keys, bad UTF-8, out-of-range numbers)
		}
		again, err := jsondoc.Canonical(canon)
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical form is not a fixed point: %q -> %q -> %q (%v)", data, canon, again, err)
		}
		var orig, back any
		if err := json.Unmarshal(data, &orig); err != nil {
			t.Fatalf("canonicalised input encoding/json rejects: %q: %v", data, err)
		}
		if err := json.Unmarshal(canon, &back); err != nil {
			t.Fatalf("canonical form does not parse: %q: %v", canon, err)
		}
		if !reflect.DeepEqual(orig, back) {
			t.Fatalf("canonical form changed the value: %q -> %q", data, canon)
		}

		want, err := jsondoc.Hash(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsondoc.Sum(canon); got != want {
			t.Fatalf("Sum of the canonical form differs from Hash for %q", data)
		}
		h := fnv.New64a()
		h.Write(data)
		rng := rand.New(rand.NewPCG(h.Sum64(), 5))
		for range 3 {
			other := respell(t, data, rng)
			got, err := jsondoc.Hash(other)
			if err != nil {
				t.Fatalf("respelling %q as %q broke it: %v", data, other, err)
			}
			if got != want {
				t.Fatalf("equal values hash differently:\n%q\n%q", data, other)
			}
		}
		marshalled, err := json.Marshal(orig)
		if err != nil {
			t.Fatalf("marshal the decoded value of %q: %v", data, err)
		}
		if got, err := jsondoc.Hash(marshalled); err != nil || got != want {
			t.Fatalf("the hash of the decoded value, marshalled again, differs for %q (%v)", data, err)
		}
	})
}

// respell writes the JSON value of data again with shuffled object keys,
// random whitespace, encoding/json's string escapes and, at random, numbers
// in exponent notation: the same value, other bytes.
func respell(t *testing.T, data []byte, rng *rand.Rand) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	ws := func() {
		for range rng.IntN(3) {
			out.WriteByte(" \t\n\r"[rng.IntN(4)])
		}
	}
	var value func()
	value = func() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("respell %q: %v", data, err)
		}
		ws()
		switch v := tok.(type) {
		case json.Delim:
			if v == '[' {
				out.WriteByte('[')
				for i := 0; dec.More(); i++ {
					if i > 0 {
						out.WriteByte(',')
					}
					ws()
					value()
				}
				_, _ = dec.Token()
				out.WriteByte(']')
				break
			}
			// An object: collect members, then write them shuffled.
			type member struct{ key, val []byte }
			var members []member
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					t.Fatalf("respell %q: %v", data, err)
				}
				kb, _ := json.Marshal(k.(string))
				saved := out
				out = bytes.Buffer{}
				value()
				members = append(members, member{kb, bytes.Clone(out.Bytes())})
				out = saved
			}
			_, _ = dec.Token()
			rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
			out.WriteByte('{')
			for i, m := range members {
				if i > 0 {
					out.WriteByte(',')
				}
				ws()
				out.Write(m.key)
				ws()
				out.WriteByte(':')
				ws()
				out.Write(m.val)
			}
			out.WriteByte('}')
		case string:
			b, _ := json.Marshal(v)
			out.Write(b)
		case json.Number:
			f, err := strconv.ParseFloat(string(v), 64)
			if err == nil && rng.IntN(2) == 0 {
				out.WriteString(strconv.FormatFloat(f, 'e', -1, 64))
			} else {
				out.WriteString(string(v))
			}
		case bool:
			out.WriteString(strconv.FormatBool(v))
		case nil:
			out.WriteString("null")
		}
		ws()
	}
	value()
	return out.Bytes()
}
