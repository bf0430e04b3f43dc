package jsondoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// Equal reports whether two JSON documents are the same value. Clients
// parse and re-serialise what they were sent (JavaScript may rewrite 1.50
// as 1.5 and drop whitespace), and jsonb rewrites numbers (1e2 is stored
// as 100), so bytes cannot be compared. Numbers compare as float64, like a
// JavaScript client reads them; one beyond that range compares as ±Inf
// rather than failing, so a stored value (a model's tool input, say) can
// always be matched by the copy the server gave out. An empty document
// equals null.
func Equal(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b) || isNull(a) && isNull(b)
	}
	va, okA := decodeNumbers(a)
	vb, okB := decodeNumbers(b)
	return okA && okB && equalValues(va, vb)
}

func isNull(b []byte) bool { return len(b) == 0 || string(b) == "null" }

// decodeNumbers decodes raw, exactly one value, keeping numbers as
// json.Number. Equal runs on every part of every chat request, so it uses
// encoding/json's Decode rather than Parse's walk: it needs no findings.
func decodeNumbers(raw []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data after the value
	}
	return v, true
}

// equalValues compares two decoded JSON values, numbers by their float64
// value (±Inf past its range).
func equalValues(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !equalValues(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalValues(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, errA := strconv.ParseFloat(string(a), 64)
		fb, errB := strconv.ParseFloat(string(b), 64)
		return fa == fb && rangeOnly(errA) && rangeOnly(errB)
	default:
		return a == b
	}
}

// rangeOnly reports whether err is nil or only says the number is past
// float64's range (ParseFloat then returns ±Inf).
func rangeOnly(err error) bool {
	return err == nil || errors.Is(err, strconv.ErrRange)
}
