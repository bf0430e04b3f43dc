package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/labstack/echo/v4"
)

// StatusClientClosedRequest is nginx's 499: the client went away before
// the answer; it is recorded, never sent.
const StatusClientClosedRequest = 499

// ProblemContentType is the media type of RFC 9457 problem documents.
const ProblemContentType = "application/problem+json"

// ErrorHandler is the one place errors become HTTP responses: every error a
// handler or middleware returns, Echo's own included, is written as a
// problem with a stable code. 5xx causes are logged, never sent.
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
			// The client went away (a long poll given up, a closed tab):
			// no server failure to log or count as a 500. 499 is nginx's
			// "client closed request", for the access log and metrics; no
			// one reads the response.
			log.Info("request abandoned by the client", "request_id", c.Response().Header().Get(echo.HeaderXRequestID),
				"method", c.Request().Method, "path", c.Request().URL.Path)
			c.Response().WriteHeader(StatusClientClosedRequest)
			return
		}
		p := ToProblem(err)
		reqID := c.Response().Header().Get(echo.HeaderXRequestID)
		if p.Status >= 500 {
			log.Error("request failed", "request_id", reqID, "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		}
		if p.Status == http.StatusUnauthorized && c.Response().Header().Get("WWW-Authenticate") == "" {
			// A route that says more (/mcp: where its OAuth metadata
			// is) has set its own.
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="invoiced"`)
		}
		SetRetryAfter(c, p)
		body := map[string]any{
			"type":   "about:blank",
			"title":  p.Title,
			"status": p.Status,
			"code":   p.Code,
		}
		if p.Detail != "" {
			body["detail"] = p.Detail
		}
		if len(p.Errors) > 0 {
			body["errors"] = p.Errors
		}
		if reqID != "" {
			body["request_id"] = reqID
		}
		for k, v := range p.Extra {
			// RFC 9457's members (status above all) keep their meaning.
			switch k {
			case "type", "title", "status", "code", "detail", "errors", "request_id":
				continue
			}
			body[k] = v
		}
		b, mErr := json.Marshal(body)
		if mErr != nil {
			log.Error("marshal problem", "err", mErr)
			b = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"code":"INTERNAL"}`)
		}
		c.Response().Header().Set(echo.HeaderContentType, ProblemContentType)
		c.Response().WriteHeader(p.Status)
		// Written for HEAD too: net/http drops it and sends the
		// Content-Length a GET would have.
		_, _ = c.Response().Write(b)
	}
}

// SetRetryAfter sends p's RetryAfter, if it has one, as the Retry-After
// header in whole seconds.
func SetRetryAfter(c echo.Context, p *problem.Error) {
	if p.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(p.RetryAfter.Seconds()))))
	}
}

// ToProblem maps any error to a problem: typed errors keep theirs, a
// database that cannot be reached is 503 UNAVAILABLE wherever the error
// came from (a token lookup, a transaction's begin, an error wrapped with
// %w on its way up), Echo's HTTP errors get a code by status, anything
// else is a 500 with no detail.
func ToProblem(err error) *problem.Error {
	if p, ok := problem.As(err); ok {
		if p.Title == "" {
			// Copy: problems may be shared package-level values.
			c := *p
			c.Title = http.StatusText(p.Status)
			return &c
		}
		return p
	}
	if store.IsUnavailable(err) {
		return store.Unavailable(err)
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return problem.New(he.Code, problem.CodeNotFound, "no route matches this path")
		case http.StatusMethodNotAllowed:
			return problem.New(he.Code, problem.CodeMethodNotAllowed, "this path does not accept this method")
		case http.StatusRequestEntityTooLarge:
			return problem.New(he.Code, problem.CodeBodyTooLarge, "the request body is larger than the server accepts")
		case http.StatusUnauthorized:
			return problem.Unauthenticated("authentication is required")
		case http.StatusServiceUnavailable:
			return problem.New(he.Code, problem.CodeUnavailable, "the service is not ready")
		}
		if he.Code >= 400 && he.Code < 500 {
			return problem.New(he.Code, problem.CodeBadRequest, fmt.Sprint(he.Message))
		}
		return problem.Internal(err)
	}
	return problem.Internal(err)
}

// unavailable is /readyz's 503, with Retry-After as any 503 of an
// unavailable database (store.RetryUnavailable).
func unavailable(err error) error {
	p := problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable, "not ready: "+err.Error())
	p.RetryAfter = store.RetryUnavailable
	p.Err = err
	return p
}

// ReadBody reads the whole request body, a JSON document. Over the body
// limit it is the limit's 413; any other failure (the client stalled past
// the read timeout, or hung up) is a 400 naming the body, not a 500:
// nothing on this side failed. A body with anything in it must be sent as
// JSON (see requireJSON), else 415; an empty one needs no Content-Type.
func ReadBody(c echo.Context) ([]byte, error) {
	raw, err := readAll(c.Request().Body)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := requireJSON(c.Request().Header.Get(echo.HeaderContentType)); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// ReadBodyBytes reads the whole request body as ReadBody does, whatever
// its media type: for middleware that keeps the bytes (the idempotency
// fingerprint) and leaves judging them to the handler.
func ReadBodyBytes(c echo.Context) ([]byte, error) {
	return readAll(c.Request().Body)
}

// requireJSON refuses (415) a Content-Type that is not JSON: a client
// sending text/plain or a form may mean other bytes than the JSON they
// happen to parse as. application/json and the structured-syntax +json
// types (RFC 6839, such as application/merge-patch+json) pass; JSON is
// UTF-8 (RFC 8259 §8.1), so a charset, if named, must be utf-8.
func requireJSON(contentType string) error {
	mt, params, err := mime.ParseMediaType(contentType)
	if err == nil {
		cs, named := params["charset"]
		json := mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
		if json && (!named || strings.EqualFold(cs, "utf-8")) {
			return nil
		}
	}
	return problem.New(http.StatusUnsupportedMediaType, problem.CodeUnsupportedMediaType,
		"the request body must be JSON: send it with Content-Type: application/json")
}

func readAll(r io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(r)
	if err == nil {
		return raw, nil
	}
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	if errors.As(err, &he) || errors.As(err, &mbe) {
		return nil, err
	}
	p := problem.BadRequest(problem.CodeBadRequest, "the request body could not be read: it ended early or arrived too slowly")
	p.Err = err
	return nil, p
}

// DecodeJSON strictly decodes the request body into v: malformed JSON is
// 400 MALFORMED_JSON, an unknown field or a wrong type is 422
// VALIDATION_FAILED naming the field, a body over the limit is 413.
func DecodeJSON(c echo.Context, v any) error {
	raw, err := ReadBody(c)
	if err != nil {
		return readError(err)
	}
	return DecodeJSONReader(bytes.NewReader(raw), v)
}

// DecodeJSONReader is DecodeJSON over any reader (used by fuzz tests).
// Every body it decodes is an object (a struct or map v), so a body of
// null is 422 naming the body, as an array or a string is: decoded, null
// would leave v as it was and read as {}.
func DecodeJSONReader(r io.Reader, v any) error {
	raw, err := readAll(r)
	if err != nil {
		return readError(err)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return problem.Invalid("body", "must be an object, not null")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return problem.BadRequest(problem.CodeMalformedJSON, "the body must hold exactly one JSON value")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return problem.BadRequest(problem.CodeMalformedJSON, "the body must hold exactly one JSON value")
	}
	return duplicateKeys(raw)
}

// readError is the answer to a body that could not be read: a problem as
// it is, the body limit's error as a 413.
func readError(err error) error {
	if _, ok := problem.As(err); ok {
		return err
	}
	return decodeError(err)
}

// duplicateKeys refuses JSON in which an object names a member twice, 422
// naming it (jsondoc.DuplicateKey says why). raw must already have parsed:
// a syntax error is left to the parser's answer.
func duplicateKeys(raw []byte) error {
	f, err := jsondoc.Check(raw)
	if err != nil {
		return nil //nolint:nilerr // the decoder's answer stands
	}
	if path, ok := f.First(jsondoc.DuplicateKey); ok {
		return problem.Invalid(path, "%s", jsondoc.DuplicateKey.Message())
	}
	return nil
}

func decodeError(err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return err // 413 from the body limit
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return problem.Invalid(field, "must be %s, not %s", jsonTypeName(te.Type.Kind().String()), te.Value)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return problem.Invalid(name, "is not a known field")
	}
	if errors.Is(err, io.EOF) {
		return problem.BadRequest(problem.CodeMalformedJSON, "the request body is empty; a JSON object is required")
	}
	p := problem.BadRequest(problem.CodeMalformedJSON, "the request body is not valid JSON: "+err.Error())
	p.Err = err
	return p
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "of another type"
}
