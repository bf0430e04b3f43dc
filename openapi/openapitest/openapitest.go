// Package openapitest holds every HTTP exchange a test makes to the
// in-process service to openapi/openapi.yaml: Wrap goes around the
// service's handler, checks each request and response with kin-openapi's
// openapi3filter, and fails the test for every difference, saying what the
// document lacks. So the document cannot drift from the server while the
// suite passes.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/invoiced/invoiced/openapi"
)

// checkedHeaders are the response headers the server sets on purpose: each
// sent must be declared on the response that carries it. (openapi3filter
// checks declared headers only.)
var checkedHeaders = []string{"Location", "ETag", "Idempotent-Replayed", "Retry-After", "X-Request-Id", "WWW-Authenticate"}

// notSent is the status the error handler records for a client that went
// away (server.StatusClientClosedRequest, nginx's 499); no one receives it.
const notSent = 499

var router = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi.Document()
	if err != nil {
		return nil, err
	}
	// Bodies the document gives as {type: string}: an SSE stream, an HTML
	// page, the inbox's static files, a PDF. openapi3filter decodes only
	// JSON, forms and plain text by itself.
	for _, ct := range []string{"text/event-stream", "text/html", "text/css", "text/javascript", "image/svg+xml", "application/pdf"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	return legacy.NewRouter(doc)
})

var options = func() *openapi3filter.Options {
	o := &openapi3filter.Options{
		MultiError: true,
		// Defaults are written into the request otherwise.
		SkipSettingDefaults: true,
		// Who may call is the server's business; the document says how.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	}
	o.WithCustomSchemaErrorFunc(schemaError)
	return o
}()

// schemaError says where and why, without the schema and value dumps that
// make a default message hundreds of lines long.
func schemaError(err *openapi3.SchemaError) string {
	at := "/" + strings.Join(err.JSONPointer(), "/")
	reason := err.Reason
	if reason == "" {
		reason = "does not match the schema's " + err.SchemaField
	}
	if at == "/" || strings.Contains(reason, at) {
		return reason
	}
	return "at " + at + ": " + reason
}

// Wrap returns h checked against the document for t's lifetime.
//
// Every response is checked: its status must be declared for the
// operation (a blanket default does not count), its body must match that
// status's schema, and the headers in checkedHeaders it carries must be
// declared. A request the document refuses is a mismatch only when the
// server accepted it (answered below 400): bad-input tests send such
// requests on purpose, and the server refusing them too is agreement. A
// path or method the document lacks may only be answered 404 or 405.
//
// HEAD and OPTIONS follow the rule the document's description states
// rather than an operation each: a HEAD is checked as the path's GET
// (status, headers) without a body, unless that GET is an event stream,
// which has no HEAD; an OPTIONS must be answered 204 with an Allow header
// naming exactly Allow(path) (or a status every operation of the path
// declares, such as 401).
//
// The mismatches are reported by a Cleanup registered now, so it runs
// after the Cleanups the caller registers later (closing its server)
// and after the exchanges still running have ended.
func Wrap(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	c, err := newChecker()
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	t.Cleanup(func() { c.report(t) })
	return c.wrap(h)
}

type checker struct {
	router  routers.Router
	running sync.WaitGroup
	mu      sync.Mutex
	seen    map[string]*seen // by mismatch, told by path template: one report however many ids
	order   []string
}

// seen is how many exchanges showed a mismatch, and the first one's URI.
type seen struct {
	n   int
	uri string
}

func newChecker() (*checker, error) {
	r, err := router()
	if err != nil {
		return nil, err
	}
	return &checker{router: r, seen: map[string]*seen{}}, nil
}

func (c *checker) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c.running.Add(1)
		defer c.running.Done()
		c.serve(h, w, req)
	})
}

// mismatches returns each mismatch seen, with the first exchange that
// showed it and how many did.
func (c *checker) mismatches() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.order))
	for _, m := range c.order {
		s := c.seen[m]
		m += " [" + s.uri
		if s.n > 1 {
			m += fmt.Sprintf(" and %d more", s.n-1)
		}
		out = append(out, m+"]")
	}
	return out
}

// drain bounds how long report waits for exchanges still running after
// the test's server closed (a stream whose handler has not yet seen its
// connection close).
const drain = 30 * time.Second

func (c *checker) report(t testing.TB) {
	done := make(chan struct{})
	go func() { c.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drain):
		t.Errorf("openapitest: exchanges still running %v after the test's server closed; their mismatches are not reported", drain)
	}
	for _, m := range c.mismatches() {
		t.Errorf("openapi mismatch: %s", m)
	}
}

func (c *checker) mismatch(req *http.Request, format string, args ...any) {
	m := fmt.Sprintf(format, args...)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.seen[m]
	if s == nil {
		s = &seen{uri: req.Method + " " + req.URL.RequestURI()}
		c.seen[m] = s
		c.order = append(c.order, m)
	}
	s.n++
}

// Allow is the Allow header the server answers OPTIONS on a path of the
// document with, sorted: OPTIONS, the path's methods, and HEAD beside a
// GET that is not an event stream (RFC 9110 §9.3.2, §9.3.7).
func Allow(item *openapi3.PathItem) []string {
	methods := []string{http.MethodOptions}
	for m, op := range item.Operations() {
		methods = append(methods, m)
		if m == http.MethodGet && !streams(op) {
			methods = append(methods, http.MethodHead)
		}
	}
	sort.Strings(methods)
	return methods
}

// streams says whether op answers 200 with an event stream.
func streams(op *openapi3.Operation) bool {
	r := op.Responses.Status(http.StatusOK)
	return r != nil && r.Value != nil && r.Value.Content.Get("text/event-stream") != nil
}

// headOptions are the options for a HEAD's response: its body is the
// GET's, which net/http does not send.
var headOptions = func() *openapi3filter.Options {
	o := *options
	o.ExcludeResponseBody = true
	return &o
}()

func (c *checker) serve(h http.Handler, w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodOptions {
		c.serveOptions(h, w, req)
		return
	}
	body, readErr := readAll(req)
	// A HEAD is the path's GET without the body.
	lookup, opts := req, options
	if req.Method == http.MethodHead {
		lookup, opts = req.Clone(req.Context()), headOptions
		lookup.Method = http.MethodGet
	}
	route, params, findErr := c.router.FindRoute(lookup)
	if findErr == nil && req.Method == http.MethodHead && streams(route.Operation) {
		findErr = routers.ErrMethodNotAllowed
	}
	var in *openapi3filter.RequestValidationInput
	var reqErr error
	// A body that could not be read whole (the client stalled or hung up)
	// is not checked: the server's answer to it still is.
	if findErr == nil && readErr == nil {
		// A clone: validation reads the body and may rewrite parts of
		// the request.
		vr := lookup.Clone(context.WithoutCancel(req.Context()))
		vr.Body = readCloser(body)
		in = &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: opts}
		reqErr = openapi3filter.ValidateRequest(vr.Context(), in)
	}

	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	if req.Body != nil && req.Body != http.NoBody {
		// The server reads what the client sent, ending as it did.
		req.Body = &replay{Reader: bytes.NewReader(body), err: readErr}
	}
	h.ServeHTTP(rec, req)
	status := rec.status
	if status == notSent || (!rec.written && req.Context().Err() != nil) {
		return // the client went away; nothing was answered
	}
	got := fmt.Sprintf("answered %d%s", status, problemCode(rec))

	if findErr != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return
		}
		template := pathTemplate(req.URL.Path)
		c.mismatch(req, "%s %s %s, but openapi/openapi.yaml has no such operation: add paths.%q.%s with an operationId, "+
			"its parameters and request body, and a response for each status it answers (%d here)",
			req.Method, template, got, template, strings.ToLower(req.Method), status)
		return
	}
	c.checkAnswer(req, lookup, rec, route, params, in, reqErr, opts)
}

// checkAnswer checks the answer of a documented operation: a request the
// document refuses is refused, the status is declared with its headers,
// and the response matches its schema.
func (c *checker) checkAnswer(req, lookup *http.Request, rec *recorder, route *routers.Route, params map[string]string,
	in *openapi3filter.RequestValidationInput, reqErr error, opts *openapi3filter.Options) {
	status := rec.status
	got := fmt.Sprintf("answered %d%s", status, problemCode(rec))
	op := route.Operation
	what := req.Method + " " + route.Path
	if reqErr != nil && status < 400 {
		c.mismatch(req, "%s %s to a request %s refuses (the server must refuse it too, or the document accept it): %v",
			what, got, op.OperationID, oneLine(reqErr))
	}
	resp := op.Responses.Status(status)
	if resp == nil || resp.Value == nil {
		declared := slices.Sorted(func(yield func(string) bool) {
			for k := range op.Responses.Map() {
				if !yield(k) {
					return
				}
			}
		})
		c.mismatch(req, "%s %s, not declared for %s (declared: %s): add responses.\"%d\"%s to it in openapi/openapi.yaml",
			what, got, op.OperationID, strings.Join(declared, ", "), status, codeHint(rec))
		return
	}
	for _, hd := range checkedHeaders {
		if rec.Header().Get(hd) != "" && resp.Value.Headers[hd] == nil {
			c.mismatch(req, "%s %s with header %s, not declared on responses.\"%d\" of %s: add headers.%s to it",
				what, got, hd, status, op.OperationID, hd)
		}
	}
	err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: responseInput(in, route, params, lookup, opts),
		Status:                 status,
		Header:                 rec.Header(),
		Body:                   readCloser(rec.body.Bytes()),
		Options:                opts,
	})
	if err != nil {
		c.mismatch(req, "%s %s, which does not match responses.\"%d\" of %s: %v", what, got, status, op.OperationID, oneLine(err))
	}
}

// responseInput is the request side ValidateResponse needs: the validated
// request's, or one naming the route when the request was not validated.
func responseInput(in *openapi3filter.RequestValidationInput, route *routers.Route, params map[string]string, req *http.Request,
	opts *openapi3filter.Options) *openapi3filter.RequestValidationInput {
	if in != nil {
		return in
	}
	return &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
}

// serveOptions checks an OPTIONS exchange: on a path of the document, 204
// with exactly Allow(path) and no body, or a status each of the path's
// operations declares (401 before authentication, 503); elsewhere, 404.
func (c *checker) serveOptions(h http.Handler, w http.ResponseWriter, req *http.Request) {
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	h.ServeHTTP(rec, req)
	if rec.status == notSent {
		return
	}
	item := c.pathItem(req)
	if item == nil {
		if rec.status != http.StatusNotFound {
			c.mismatch(req, "OPTIONS %s answered %d, but openapi/openapi.yaml has no such path: only 404 fits", pathTemplate(req.URL.Path), rec.status)
		}
		return
	}
	what := "OPTIONS " + pathTemplate(req.URL.Path)
	if rec.status != http.StatusNoContent {
		for _, op := range item.Operations() {
			if op.Responses.Status(rec.status) == nil {
				c.mismatch(req, "%s answered %d, which not every operation of the path declares: OPTIONS answers 204 with Allow", what, rec.status)
				return
			}
		}
		return
	}
	var got []string
	for _, m := range strings.Split(rec.Header().Get("Allow"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			got = append(got, m)
		}
	}
	sort.Strings(got)
	if want := Allow(item); !slices.Equal(got, want) {
		c.mismatch(req, "%s answered Allow: %s, but the document's operations for the path make it %s (HEAD beside a GET that is no event stream)",
			what, strings.Join(got, ", "), strings.Join(want, ", "))
	}
	if rec.body.Len() > 0 {
		c.mismatch(req, "%s answered 204 with a body", what)
	}
}

// pathItem is the document's path that req's path matches, whatever the
// method, or nil.
func (c *checker) pathItem(req *http.Request) *openapi3.PathItem {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		r := req.Clone(req.Context())
		r.Method = m
		if route, _, err := c.router.FindRoute(r); err == nil {
			return route.PathItem
		}
	}
	return nil
}

// problemCode is " CODE" when the response is a problem with a code.
func problemCode(rec *recorder) string {
	if code := codeOf(rec); code != "" {
		return " " + code
	}
	return ""
}

func codeHint(rec *recorder) string {
	if code := codeOf(rec); code != "" {
		return " (problem code " + code + ")"
	}
	return ""
}

func codeOf(rec *recorder) string {
	ct, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if ct != "application/problem+json" {
		return ""
	}
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(rec.body.Bytes(), &p) != nil {
		return ""
	}
	return p.Code
}

// pathTemplate guesses the document's template for a path the document
// lacks: a segment that is a UUID or a number becomes {id}.
func pathTemplate(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil || looksLikeUUID(s) {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

func looksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}

// oneLine keeps a validator's message on one line of test output, and its
// distinct reasons in a stable order.
func oneLine(err error) string {
	var me openapi3.MultiError
	if errors.As(err, &me) && len(me) > 1 {
		parts := make([]string, 0, len(me))
		for _, e := range me {
			parts = append(parts, oneLine(e))
		}
		sort.Strings(parts)
		return strings.Join(slices.Compact(parts), " | ")
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
