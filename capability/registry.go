package capability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/text"
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
	if c.Governed && c.Risk != RiskBound {
		return fmt.Errorf("capability %q: only a bound capability is marked governed (a consequential one always is)", c.Name)
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
	for _, f := range textFormats {
		comp.RegisterFormat(f)
	}
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

// Formats for strings people read before they act (package text): a
// schema marks a name or description "visible-text" and free text
// "plain-text", so Prepare refuses them on every path, before a
// confirmation or an approval is asked for them. "email" is the
// validator's own format after text.Address: its quoted local part
// ("…"@example.com) takes any character but a quote or backslash, a
// right-to-left override or a zero width space too.
var textFormats = []*jsonschema.Format{
	{Name: "visible-text", Validate: stringFormat(text.Name)},
	{Name: "plain-text", Validate: stringFormat(text.Prose)},
	{Name: "email", Validate: both(stringFormat(text.Address), builtinFormat("email"))},
}

// textRefusal is a refusal by a rule of package text, whose message is
// the whole answer (validationProblem).
type textRefusal struct{ error }

func (r textRefusal) Unwrap() error { return r.error }

func stringFormat(check func(string) error) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil // "type" judges a value that is not a string
		}
		if err := check(s); err != nil {
			return textRefusal{err}
		}
		return nil
	}
}

// both runs first, then second if first passed.
func both(first, second func(any) error) func(any) error {
	return func(v any) error {
		if err := first(v); err != nil {
			return err
		}
		return second(v)
	}
}

// builtinFormat is the validator's own check of format name, which a
// format registered under the same name replaces.
func builtinFormat(name string) func(any) error {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "urn:invoiced:format:" + name
	if err := c.AddResource(url, map[string]any{"format": name}); err != nil {
		panic(err)
	}
	s := c.MustCompile(url)
	return func(v any) error {
		err := s.Validate(v)
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		// The format's own error, which the caller's kind.Format wraps.
		for len(ve.Causes) > 0 {
			ve = ve.Causes[0]
		}
		if f, ok := ve.ErrorKind.(*kind.Format); ok {
			return f.Err
		}
		return err
	}
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

// ParseInput decodes a capability's raw input, the one parse of it: empty
// or null is {}, and anything that is not JSON is 400 MALFORMED_JSON.
func ParseInput(raw []byte) (*jsondoc.Doc, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		raw = []byte("{}")
	}
	doc, err := jsondoc.Parse(raw)
	if err != nil {
		return nil, problem.BadRequest(problem.CodeMalformedJSON, "input is not valid JSON")
	}
	return doc, nil
}

// Prepare validates raw input against the capability's schema, applies
// schema defaults and normalisation (lowercase UUIDs), and returns the Call
// with its effective input in canonical form and its hash. Principal, Via
// and IfMatch are the caller's to fill. Refusals are 422 VALIDATION_FAILED
// naming each field.
func (r *Registry) Prepare(name string, raw json.RawMessage) (Call, error) {
	e, err := r.entry(name)
	if err != nil {
		return Call{}, err
	}
	doc, err := ParseInput(raw)
	if err != nil {
		return Call{}, err
	}
	return e.prepare(doc)
}

// PrepareDoc is Prepare of an input its caller parsed with ParseInput (a
// REST route that reads members of its body first). It normalises
// doc.Value in place.
func (r *Registry) PrepareDoc(name string, doc *jsondoc.Doc) (Call, error) {
	e, err := r.entry(name)
	if err != nil {
		return Call{}, err
	}
	return e.prepare(doc)
}

func (r *Registry) entry(name string) (*entry, error) {
	e, ok := r.caps[name]
	if !ok {
		return nil, problem.New(http.StatusNotFound, CodeUnknownCapability, fmt.Sprintf("there is no capability named %q; GET /v1/capabilities lists them", name))
	}
	return e, nil
}

// Rules of the input that the schema cannot see: text PostgreSQL cannot
// store and members named twice are refused before validation (the schema
// reads the decoded value, where a repair or the last member already
// hides them); numbers and escapes RFC 8785 cannot hash faithfully after
// it, so that a wrong type is named as such.
var (
	rulesBeforeSchema = []jsondoc.Rule{jsondoc.InvalidUTF8, jsondoc.NUL, jsondoc.DuplicateKey}
	rulesAfterSchema  = []jsondoc.Rule{jsondoc.UnsafeNumber, jsondoc.LoneSurrogate}
)

func refuseFindings(doc *jsondoc.Doc, rules []jsondoc.Rule) error {
	for _, rule := range rules {
		if path, ok := doc.First(rule); ok {
			return problem.Invalid(inputField(path), "%s", rule.Message())
		}
	}
	return nil
}

// prepare checks doc, applies defaults and normalisation, and
// canonicalises the effective input once; its hash is of those bytes.
func (e *entry) prepare(doc *jsondoc.Doc) (Call, error) {
	if err := refuseFindings(doc, rulesBeforeSchema); err != nil {
		return Call{}, err
	}
	if err := e.schema.Validate(doc.Value); err != nil {
		return Call{}, validationProblem(err)
	}
	if err := refuseFindings(doc, rulesAfterSchema); err != nil {
		return Call{}, err
	}
	b, err := json.Marshal(normalize(e.schemaDoc, doc.Value))
	if err != nil {
		return Call{}, fmt.Errorf("marshal input: %w", err)
	}
	canon, err := jsondoc.Canonical(b)
	if err != nil {
		// What the walk does not judge, RFC 8785's library refuses (a
		// document nested past its depth).
		return Call{}, problem.Invalid("input", "must be I-JSON (RFC 7493): %v", errors.Unwrap(err))
	}
	return Call{Name: e.Name, Input: canon, InputHash: jsondoc.Sum(canon)}, nil
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
		msg := v.ErrorKind.LocalizedString(printer)
		var tr textRefusal
		if f, ok := v.ErrorKind.(*kind.Format); ok && errors.As(f.Err, &tr) {
			// The rule alone: the refused text would repeat what it was
			// refused for (an override reordering the message).
			msg = f.Err.Error()
		}
		fields = append(fields, problem.FieldError{Field: fieldPath(v.InstanceLocation), Message: msg})
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

// inputField names a jsondoc path in a refusal: the whole input is "input".
func inputField(path string) string {
	if path == "" {
		return "input"
	}
	return path
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
