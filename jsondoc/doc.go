// Package jsondoc holds the service's rules for JSON documents, with no
// HTTP in it: one decoding walk that finds, with the field path, what
// PostgreSQL or I-JSON (RFC 7493) would refuse; the canonical form (RFC
// 8785) and its hash that approvals, confirmations and the audit chain
// bind to; and equality of documents as a JavaScript client reads them.
package jsondoc

import "strconv"

// Rule is something a JSON document can break that the service refuses
// or must know about.
type Rule uint8

// The rules.
const (
	// InvalidUTF8: a string or member name holds bytes that are not
	// UTF-8. encoding/json reads them as U+FFFD, so two inputs would
	// share one value; PostgreSQL refuses them.
	InvalidUTF8 Rule = iota
	// NUL: a string or member name holds U+0000, which PostgreSQL text
	// and jsonb cannot store.
	NUL
	// DuplicateKey: an object names a member twice. Decoders disagree on
	// which one wins (Go keeps the last, others the first), so an
	// approver could be shown other content than the effect runs with;
	// I-JSON (RFC 7493 §2.3) forbids it.
	DuplicateKey
	// UnsafeNumber: a number beyond ±(2^53−1). RFC 8785 writes numbers
	// as IEEE doubles, so larger integers would collide (two amounts, one
	// hash); I-JSON (RFC 7493 §2.2) bounds them so.
	UnsafeNumber
	// LoneSurrogate: a string escapes half of a UTF-16 surrogate pair
	// ("\ud800") without the other. encoding/json reads it as U+FFFD, so
	// it and a real U+FFFD would share one value; RFC 8785 and jsonb
	// refuse it.
	LoneSurrogate
	// OutOfRange: a number beyond float64 (about ±1.8e308), which no
	// JavaScript client can send back and RFC 8785 cannot write.
	OutOfRange
	// Inexact: a number whose text is not exactly the double RFC 8785
	// writes for it (3.00000000000000000001 hashes as 3).
	Inexact
	numRules
)

// Message is the refusal of a value that breaks r, as a 422 names it.
func (r Rule) Message() string {
	switch r {
	case InvalidUTF8:
		return "must be valid UTF-8"
	case NUL:
		return "must not contain the NUL character (U+0000)"
	case DuplicateKey:
		return "appears twice in one object; send each field once"
	case UnsafeNumber:
		return "must be an integer between -9007199254740991 and 9007199254740991"
	case LoneSurrogate:
		return "must not contain an unpaired UTF-16 surrogate escape (\\ud800–\\udfff)"
	case OutOfRange:
		return "must hold numbers within the range of a JavaScript number (about ±1.8e308)"
	case Inexact:
		return "must be a number that a double holds exactly"
	}
	return "rule " + strconv.Itoa(int(r))
}

// Findings holds, for each rule, the field path of the first value in
// document order that breaks it. A path joins member names and array
// indexes with "." ("lines.0.description"); the whole document is "".
type Findings struct {
	paths [numRules]string
	found [numRules]bool
}

// First returns the path of the first value that breaks r, and whether
// any does.
func (f *Findings) First(r Rule) (path string, ok bool) {
	return f.paths[r], f.found[r]
}

func (f *Findings) note(r Rule, path func() string) {
	if !f.found[r] {
		f.paths[r], f.found[r] = path(), true
	}
}

// Doc is a JSON document decoded once: its value (objects as
// map[string]any, arrays as []any, numbers as json.Number, the shape
// encoding/json and JSON Schema validators read) and what it breaks.
type Doc struct {
	Value any
	Findings
}
