package capability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// Registry holds the capabilities of the service. Every path (REST routes,
// /v1/capabilities/{name}/invoke, a model's tool call) runs a capability
// through Prepare and Invoke, so all of them get the same validation, the
// same effective input and the same gates.
type Registry struct {
	caps    map[string]*entry
	ordered []string
}

type entry struct {
	Capability
	schema    *jsonschema.Schema
	schemaDoc any
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{caps: map[string]*entry{}} }

// Register adds a capability, compiling its schema; a bad name, risk or
// schema is a programming error reported at start-up.
func (r *Registry) Register(c Capability) error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("capability %q: name must be kebab-case", c.Name)
	}
	if _, dup := r.caps[c.Name]; dup {
		return fmt.Errorf("capability %q registered twice", c.Name)
	}
	switch c.Risk {
	case RiskRead, RiskBound, RiskConsequential:
	default:
		return fmt.Errorf("capability %q: unknown risk %q", c.Name, c.Risk)
	}
	if c.Handler == nil {
		return fmt.Errorf("capability %q: no handler", c.Name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.InputSchema))
	if err != nil {
		return fmt.Errorf("capability %q: schema: %w", c.Name, err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	url := "urn:invoiced:capability:" + c.Name
	if err := comp.AddResource(url, doc); err != nil {
		return fmt.Errorf("capability %q: schema: %w", c.Name, err)
	}
	s, err := comp.Compile(url)
	if err != nil {
		return fmt.Errorf("capability %q: schema: %w", c.Name, err)
	}
	r.caps[c.Name] = &entry{Capability: c, schema: s, schemaDoc: doc}
	r.ordered = append(r.ordered, c.Name)
	sort.Strings(r.ordered)
	return nil
}

// MustRegister is Register that panics, for wiring at start-up.
func (r *Registry) MustRegister(cs ...Capability) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Descriptors lists every capability, sorted by name.
func (r *Registry) Descriptors() []Descriptor {
	out := make([]Descriptor, 0, len(r.ordered))
	for _, n := range r.ordered {
		out = append(out, r.caps[n].Descriptor)
	}
	return out
}

// Lookup returns a capability by name.
func (r *Registry) Lookup(name string) (Capability, bool) {
	e, ok := r.caps[name]
	if !ok {
		return Capability{}, false
	}
	return e.Capability, true
}

// CodeUnknownCapability is the problem code for a name not in the registry.
const CodeUnknownCapability = "UNKNOWN_CAPABILITY"

// maxSafeInteger is 2^53-1. The effective-input hash is over RFC 8785 JSON,
// which writes numbers as IEEE doubles; larger integers would collide (two
// different amounts, one hash), so inputs must be I-JSON (RFC 7493).
var maxSafeInteger = big.NewFloat(9007199254740991)

// Prepare validates raw input against the capability's schema, applies
// schema defaults and normalisation (lowercase UUIDs), and returns the Call with its effective input in
// canonical form and its hash. Principal, Via and IfMatch are the caller's
// to fill. Refusals are 422 VALIDATION_FAILED naming each field.
func (r *Registry) Prepare(name string, raw json.RawMessage) (Call, error) {
	e, ok := r.caps[name]
	if !ok {
		return Call{}, problem.New(http.StatusNotFound, CodeUnknownCapability, fmt.Sprintf("there is no capability named %q; GET /v1/capabilities lists them", name))
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return Call{}, problem.BadRequest(problem.CodeMalformedJSON, "input is not valid JSON")
	}
	if !utf8.Valid(raw) {
		return Call{}, problem.Invalid(invalidUTF8Field(v, ""), "must be valid UTF-8")
	}
	// PostgreSQL text cannot hold U+0000: refused here, naming the field,
	// instead of failing in the database as a 500.
	if f := nulField(v, ""); f != "" {
		return Call{}, problem.Invalid(f, "must not contain the NUL character (U+0000)")
	}
	if err := server.DuplicateKeys(raw); err != nil {
		return Call{}, err
	}
	if err := e.schema.Validate(v); err != nil {
		return Call{}, validationProblem(err)
	}
	if f := unsafeNumber(v, ""); f != "" {
		return Call{}, problem.Invalid(f, "must be an integer between -9007199254740991 and 9007199254740991")
	}
	// encoding/json reads a lone surrogate escape ("\ud800") as U+FFFD, so
	// it and a real U+FFFD would share one effective input and one hash;
	// RFC 8785 refuses it, and so does this (after the checks above, which
	// name the field for what they catch).
	if _, err := Canonical(raw); err != nil {
		return Call{}, problem.Invalid("input", "must be I-JSON (RFC 7493): %v", errors.Unwrap(err))
	}
	v = normalize(e.schemaDoc, v)
	b, err := json.Marshal(v)
	if err != nil {
		return Call{}, fmt.Errorf("marshal input: %w", err)
	}
	canon, err := Canonical(b)
	if err != nil {
		return Call{}, problem.Invalid("input", "cannot be canonicalised: %v", err)
	}
	hash, err := Hash(canon)
	if err != nil {
		return Call{}, err
	}
	return Call{Name: name, Input: canon, InputHash: hash}, nil
}

// Invoke runs a prepared call's handler.
func (r *Registry) Invoke(ctx context.Context, call Call) (any, error) {
	e, ok := r.caps[call.Name]
	if !ok {
		return nil, problem.NotFound(fmt.Sprintf("capability %q", call.Name))
	}
	if call.InputHash == "" {
		return nil, fmt.Errorf("capability %q invoked without Prepare", call.Name)
	}
	return e.Handler(ctx, call)
}

var printer = message.NewPrinter(message.MatchLanguage("en"))

func validationProblem(err error) error {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return problem.Invalid("input", "%v", err)
	}
	var fields []problem.FieldError
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) > 0 {
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		if req, ok := v.ErrorKind.(*kind.Required); ok {
			for _, p := range req.Missing {
				fields = append(fields, problem.FieldError{Field: fieldPath(append(append([]string{}, v.InstanceLocation...), p)), Message: "is required"})
			}
			return
		}
		if ap, ok := v.ErrorKind.(*kind.AdditionalProperties); ok {
			for _, p := range ap.Properties {
				fields = append(fields, problem.FieldError{Field: fieldPath(append(append([]string{}, v.InstanceLocation...), p)), Message: "is not a known field"})
			}
			return
		}
		fields = append(fields, problem.FieldError{Field: fieldPath(v.InstanceLocation), Message: v.ErrorKind.LocalizedString(printer)})
	}
	walk(ve)
	return problem.Validation(fields...)
}

func fieldPath(loc []string) string {
	if len(loc) == 0 {
		return "input"
	}
	return strings.Join(loc, ".")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unsafeNumber returns the path of the first number outside the I-JSON
// range, or "".
func unsafeNumber(v any, path string) string {
	switch t := v.(type) {
	case json.Number:
		f, _, err := big.ParseFloat(string(t), 10, 200, big.ToNearestEven)
		if err != nil || new(big.Float).Abs(f).Cmp(maxSafeInteger) > 0 {
			return fieldPath(strings.Split(path, "."))
		}
	case map[string]any:
		for k, x := range t {
			if p := unsafeNumber(x, join(path, k)); p != "" {
				return p
			}
		}
	case []any:
		for i, x := range t {
			if p := unsafeNumber(x, join(path, fmt.Sprint(i))); p != "" {
				return p
			}
		}
	}
	return ""
}

// invalidUTF8Field names the first string the decoder had to repair.
func invalidUTF8Field(v any, path string) string {
	switch t := v.(type) {
	case string:
		if strings.ContainsRune(t, utf8.RuneError) {
			return fieldPath(strings.Split(path, "."))
		}
	case map[string]any:
		for k, x := range t {
			if p := invalidUTF8Field(x, join(path, k)); p != "" {
				return p
			}
		}
	case []any:
		for i, x := range t {
			if p := invalidUTF8Field(x, join(path, fmt.Sprint(i))); p != "" {
				return p
			}
		}
	}
	if path == "" {
		return "input"
	}
	return ""
}

// nulField returns the path of the first string or object key holding
// U+0000, or "".
func nulField(v any, path string) string {
	switch t := v.(type) {
	case string:
		if strings.ContainsRune(t, 0) {
			return fieldPath(strings.Split(path, "."))
		}
	case map[string]any:
		for k, x := range t {
			if strings.ContainsRune(k, 0) {
				return fieldPath(strings.Split(join(path, k), "."))
			}
			if p := nulField(x, join(path, k)); p != "" {
				return p
			}
		}
	case []any:
		for i, x := range t {
			if p := nulField(x, join(path, fmt.Sprint(i))); p != "" {
				return p
			}
		}
	}
	return ""
}

// normalize fills absent object properties from their schema's "default"
// and lowercases strings of "format": "uuid", recursing into objects and
// array items, so that equal requests have one effective input (and one
// approval) however the client spelled them. It follows only inline
// "properties"/"items", which is all our schemas use.
func normalize(schema any, v any) any {
	s, ok := schema.(map[string]any)
	if !ok {
		return v
	}
	switch t := v.(type) {
	case string:
		if s["format"] == "uuid" {
			return strings.ToLower(t)
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for name, ps := range props {
			psm, _ := ps.(map[string]any)
			if cur, present := t[name]; present {
				t[name] = normalize(psm, cur)
			} else if d, has := psm["default"]; has {
				t[name] = d
			}
		}
	case []any:
		for i, x := range t {
			t[i] = normalize(s["items"], x)
		}
	}
	return v
}
