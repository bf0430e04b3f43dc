package jsondoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting as encoding/json's Decode and RFC 8785's
// library do (10,000): a body of a million "[" is malformed, not a
// million frames of recursion.
const maxDepth = 10_000

// errTrailing is the error of a document with data after its value.
var errTrailing = errors.New("jsondoc: data after the JSON value")

// errDepth is the error of a document nested deeper than maxDepth.
var errDepth = errors.New("jsondoc: nested too deeply")

// Parse decodes raw, which must hold exactly one JSON value, and checks
// every rule on the way: one pass gives the value and its findings. An
// error means raw is not JSON.
func Parse(raw []byte) (*Doc, error) {
	w := newWalker(raw, true)
	v, err := w.document()
	if err != nil {
		return nil, err
	}
	return &Doc{Value: v, Findings: w.found}, nil
}

// Check is Parse without building the value, for a caller that decodes
// raw into its own types: a large body of small members costs no more
// than reading it.
func Check(raw []byte) (Findings, error) {
	w := newWalker(raw, false)
	if _, err := w.document(); err != nil {
		return Findings{}, err
	}
	return w.found, nil
}

// walker is the one visitor over a document's tokens. It keeps the path
// as a stack and joins it only when a rule is broken, so a valid
// document of many members allocates no paths.
type walker struct {
	dec   *json.Decoder
	raw   []byte
	build bool
	path  []segment
	found Findings
}

// segment is a member name, or an array index when index >= 0.
type segment struct {
	name  string
	index int
}

func newWalker(raw []byte, build bool) *walker {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return &walker{dec: dec, raw: raw, build: build}
}

func (w *walker) document() (any, error) {
	v, err := w.value()
	if err != nil {
		return nil, err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return nil, errTrailing
	}
	return v, nil
}

func (w *walker) pathString() string {
	var sb strings.Builder
	for i, s := range w.path {
		if i > 0 {
			sb.WriteByte('.')
		}
		if s.index >= 0 {
			sb.WriteString(strconv.Itoa(s.index))
		} else {
			sb.WriteString(s.name)
		}
	}
	return sb.String()
}

func (w *walker) note(r Rule) { w.found.note(r, w.pathString) }

func (w *walker) value() (any, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if len(w.path) >= maxDepth {
			return nil, errDepth
		}
		if t == '{' {
			return w.object()
		}
		return w.array() // Token returns a closing delimiter only where one belongs
	case string:
		w.text(t, start)
	case json.Number:
		w.number(t)
	}
	return tok, nil
}

func (w *walker) object() (any, error) {
	var (
		obj  map[string]any
		seen map[string]struct{}
	)
	if w.build {
		obj = map[string]any{}
	} else {
		seen = map[string]struct{}{}
	}
	for w.dec.More() {
		start := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string) // inside an object, Token returns names as strings
		w.path = append(w.path, segment{name: name, index: -1})
		w.text(name, start)
		var dup bool
		if w.build {
			_, dup = obj[name]
		} else {
			_, dup = seen[name]
			seen[name] = struct{}{}
		}
		if dup {
			w.note(DuplicateKey)
		}
		v, err := w.value()
		if err != nil {
			return nil, err
		}
		if w.build {
			obj[name] = v // the last of duplicates wins, as in encoding/json
		}
		w.path = w.path[:len(w.path)-1]
	}
	return w.end(obj)
}

func (w *walker) array() (any, error) {
	var arr []any
	if w.build {
		arr = []any{}
	}
	w.path = append(w.path, segment{index: 0})
	for i := 0; w.dec.More(); i++ {
		w.path[len(w.path)-1].index = i
		v, err := w.value()
		if err != nil {
			return nil, err
		}
		if w.build {
			arr = append(arr, v)
		}
	}
	w.path = w.path[:len(w.path)-1]
	return w.end(arr)
}

// end reads the closing delimiter of the container whose value is v.
func (w *walker) end(v any) (any, error) {
	if _, err := w.dec.Token(); err != nil {
		return nil, err
	}
	if !w.build {
		return nil, nil // not v: a nil map in an interface is not nil
	}
	return v, nil
}

// text checks a string or member name s whose token began at raw[start:]
// (after any separator). encoding/json turns invalid UTF-8 and lone
// surrogate escapes into U+FFFD, so only a string holding U+FFFD needs its
// bytes read again to tell which it was, if either.
func (w *walker) text(s string, start int64) {
	if strings.IndexByte(s, 0) >= 0 {
		w.note(NUL)
	}
	if !strings.ContainsRune(s, utf8.RuneError) {
		return
	}
	lit := w.raw[start:w.dec.InputOffset()]
	lit = lit[bytes.IndexByte(lit, '"'):]
	if !utf8.Valid(lit) {
		w.note(InvalidUTF8)
	}
	if hasLoneSurrogate(lit) {
		w.note(LoneSurrogate)
	}
}

// number checks n against the number rules.
func (w *walker) number(n json.Number) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		// Only a magnitude past float64 fails: the decoder checked the
		// syntax.
		w.note(OutOfRange)
		w.note(UnsafeNumber)
		w.note(Inexact)
		return
	}
	if unsafeInteger(string(n), f) {
		w.note(UnsafeNumber)
	}
	if inexact(string(n), f) {
		w.note(Inexact)
	}
}

// hasLoneSurrogate reports whether raw JSON escapes half of a UTF-16
// surrogate pair without the other half in one of its strings.
func hasLoneSurrogate(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(raw):
			i++
			if raw[i] != 'u' {
				continue
			}
			r, ok := hex4(raw, i+1)
			if !ok || !utf16.IsSurrogate(r) {
				continue
			}
			i += 4
			// Only a high half followed by an escaped low half is whole.
			if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, ok := hex4(raw, i+3); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
					i += 6
					continue
				}
			}
			return true
		}
	}
	return false
}

// hex4 reads the four hex digits of a \u escape starting at raw[i].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
	return rune(n), err == nil
}
