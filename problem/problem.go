// Package problem defines the typed errors that every layer returns and the
// RFC 9457 problem document the HTTP error handler writes for them. A code is
// stable API: clients switch on it, so codes are never renamed.
package problem

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Stable problem codes. Feature packages may define more; these are the ones
// the foundation itself produces.
const (
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeMalformedJSON    = "MALFORMED_JSON"
	CodeBodyTooLarge     = "BODY_TOO_LARGE"
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeForbidden        = "FORBIDDEN"
	CodeValidation       = "VALIDATION_FAILED"
	CodeConflict         = "CONFLICT"
	CodeInternal         = "INTERNAL"
	CodeUnavailable      = "UNAVAILABLE"
	CodeBadRequest       = "BAD_REQUEST"
	// CodeUnsupportedMediaType is a 415: a body not sent as JSON.
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
)

// FieldError names one invalid field of a request: field is a JSON pointer-ish
// dotted path ("lines.3.quantity"), message says what is wrong with it.
type FieldError struct {
	Field string `json:"field"`
	// Code says what is wrong with the field where a client acts on it
	// (INVOICE_INCOMPLETE's missing facts); empty otherwise.
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// Error is a typed error that carries its HTTP status and stable code. Extra
// holds problem extension members (for example approval_id).
type Error struct {
	Status int
	Code   string
	Title  string
	Detail string
	Errors []FieldError
	Extra  map[string]any
	// RetryAfter, when positive, is sent as the Retry-After header: how
	// long the client should wait before trying again.
	RetryAfter time.Duration
	// Err is the cause, kept for logs; it never reaches the client.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	msg := e.Code
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// With returns a copy of e with an extension member set.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = make(map[string]any, len(e.Extra)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

// New builds an Error; title defaults to the status text.
func New(status int, code, detail string) *Error {
	return &Error{Status: status, Code: code, Title: http.StatusText(status), Detail: detail}
}

// NotFound says that the named thing does not exist (or is not visible to
// the caller, which is deliberately indistinguishable).
func NotFound(what string) *Error {
	return New(http.StatusNotFound, CodeNotFound, what+" not found")
}

// Validation is a 422 naming each invalid field.
func Validation(fields ...FieldError) *Error {
	e := New(http.StatusUnprocessableEntity, CodeValidation, "the request has invalid fields")
	e.Errors = fields
	return e
}

// Invalid is a 422 for a single invalid field.
func Invalid(field, format string, args ...any) *Error {
	return Validation(FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// BadRequest is a 400 with the given code.
func BadRequest(code, detail string) *Error { return New(http.StatusBadRequest, code, detail) }

// Conflict is a 409 with the given code.
func Conflict(code, detail string) *Error { return New(http.StatusConflict, code, detail) }

// Forbidden is a 403.
func Forbidden(detail string) *Error { return New(http.StatusForbidden, CodeForbidden, detail) }

// Unauthenticated is a 401; the HTTP layer adds WWW-Authenticate.
func Unauthenticated(detail string) *Error {
	return New(http.StatusUnauthorized, CodeUnauthenticated, detail)
}

// Internal wraps an unexpected error as a 500 whose detail says nothing of it.
func Internal(err error) *Error {
	e := New(http.StatusInternalServerError, CodeInternal, "an internal error occurred; it has been logged")
	e.Err = err
	return e
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe, true
	}
	return nil, false
}

// HasCode reports whether err carries a problem with the given code.
func HasCode(err error, code string) bool {
	pe, ok := As(err)
	return ok && pe.Code == code
}
