package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// CodeVersionMismatch is the 412 problem code of an If-Match that names no
// current version (shared with the feature packages that check it).
const CodeVersionMismatch = "VERSION_MISMATCH"

// Versioned is an output that carries an optimistic-concurrency version;
// the HTTP layer sends it as the ETag.
type Versioned interface {
	ResourceVersion() int64
}

// ETag renders version as a strong entity tag.
func ETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// ParseIfMatch reads an If-Match header into a version: 0 when the header
// is absent or "*". Anything else that is not an ETag this service sent
// cannot match the current version, so it is a 412 (RFC 9110 §13.1.1).
func ParseIfMatch(h string) (int64, error) {
	h = strings.TrimSpace(h)
	if h == "" || h == "*" {
		return 0, nil
	}
	v := strings.Trim(strings.TrimPrefix(h, "W/"), `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, problem.New(http.StatusPreconditionFailed, CodeVersionMismatch,
			fmt.Sprintf("If-Match %q is not an ETag this service sent", h))
	}
	return n, nil
}

// CheckIfMatch honours an If-Match version (0: none was sent): another
// version than current is 412 VERSION_MISMATCH naming the current one.
func CheckIfMatch(ifMatch, current int64) error {
	if ifMatch != 0 && ifMatch != current {
		return problem.New(http.StatusPreconditionFailed, CodeVersionMismatch,
			fmt.Sprintf("the resource is at version %d; fetch it again and retry with its ETag", current)).
			With("current_version", current)
	}
	return nil
}

// HTTP serves a Registry over HTTP and runs capabilities for the REST
// routes, so every path builds its Call the same way.
type HTTP struct {
	Registry *Registry
}

// Run prepares and invokes capability name with input for the request's
// principal, arriving by via, honouring the request's If-Match header.
func (h *HTTP) Run(c echo.Context, name string, input json.RawMessage, via Path) (any, error) {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return nil, err
	}
	ifMatch, err := ParseIfMatch(c.Request().Header.Get("If-Match"))
	if err != nil {
		return nil, err
	}
	call, err := h.Registry.Prepare(name, input)
	if err != nil {
		return nil, err
	}
	call.Principal, call.Via, call.IfMatch = p, via, ifMatch
	return h.Registry.Invoke(c.Request().Context(), call)
}

// Respond writes out as JSON with status, with an ETag when out is
// Versioned.
func Respond(c echo.Context, status int, out any) error {
	if v, ok := out.(Versioned); ok {
		c.Response().Header().Set("ETag", ETag(v.ResourceVersion()))
	}
	return c.JSON(status, out)
}

// List answers GET /v1/capabilities with every descriptor.
func (h *HTTP) List(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"data": h.Registry.Descriptors()})
}

// invokeBody is the body of POST /v1/capabilities/{name}/invoke.
type invokeBody struct {
	Input json.RawMessage `json:"input"`
}

// Invoke answers POST /v1/capabilities/{name}/invoke {"input": {...}} with
// {"output": ...} or a problem. It is the contextual-binding path: a UI
// control calling a capability directly, with no model and no frontend
// confirmation, so consequential capabilities still meet their gate.
func (h *HTTP) Invoke(c echo.Context) error {
	raw, err := server.ReadBody(c)
	if err != nil {
		return err // the body limit's 413
	}
	var body invokeBody
	if err := server.DecodeJSONReader(bytes.NewReader(raw), &body); err != nil {
		return err
	}
	out, err := h.Run(c, c.Param("name"), body.Input, PathBinding)
	if err != nil {
		return err
	}
	if v, ok := out.(Versioned); ok {
		c.Response().Header().Set("ETag", ETag(v.ResourceVersion()))
	}
	return c.JSON(http.StatusOK, map[string]any{"output": out})
}
