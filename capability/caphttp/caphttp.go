// Package caphttp serves a capability registry over HTTP: the REST routes
// and POST /v1/capabilities/{name}/invoke build their calls here, so every
// HTTP path runs a capability the same way.
package caphttp

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves a Registry over HTTP and runs capabilities for the REST
// routes.
type Handler struct {
	Registry *capability.Registry
}

// Run prepares and invokes capability name with input (parsed by
// capability.ParseInput) for the request's principal, arriving by via,
// honouring the request's If-Match header (all its field lines).
func (h *Handler) Run(c echo.Context, name string, input *jsondoc.Doc, via capability.Path) (any, error) {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return nil, err
	}
	ifMatch, err := etag.ReadIfMatch(c.Request().Header)
	if err != nil {
		return nil, err
	}
	call, err := h.Registry.PrepareDoc(name, input)
	if err != nil {
		return nil, err
	}
	call.Principal, call.Via, call.IfMatch = p, via, ifMatch
	return h.Registry.Invoke(c.Request().Context(), call)
}

// Body reads and parses the JSON object of a request (empty means {}),
// the one parse of it, and sets key to the path id. What only Prepare can
// name (invalid UTF-8, a body that is not an object) is left to it.
func Body(c echo.Context, key string, id uuid.UUID) (*jsondoc.Doc, error) {
	raw, err := server.ReadBody(c)
	if err != nil {
		return nil, err // the body limit's 413
	}
	doc, err := capability.ParseInput(raw)
	if err != nil || key == "" {
		return doc, err
	}
	if _, bad := doc.First(jsondoc.InvalidUTF8); bad {
		return doc, nil
	}
	obj, ok := doc.Value.(map[string]any)
	if !ok {
		return doc, nil
	}
	// Before the path id joins the members.
	if path, dup := doc.First(jsondoc.DuplicateKey); dup {
		return nil, problem.Invalid(path, "%s", jsondoc.DuplicateKey.Message())
	}
	if _, ok := obj[key]; ok {
		return nil, problem.Invalid(key, "is taken from the path; leave it out of the body")
	}
	obj[key] = id.String()
	return doc, nil
}

// Respond writes out as JSON with status, with an ETag when out is
// capability.Versioned.
func Respond(c echo.Context, status int, out any) error {
	setETag(c, out)
	return c.JSON(status, out)
}

func setETag(c echo.Context, out any) {
	if v, ok := out.(capability.Versioned); ok {
		c.Response().Header().Set("ETag", etag.FromVersion(v.ResourceVersion()))
	}
}

// List answers GET /v1/capabilities with every descriptor.
func (h *Handler) List(c echo.Context) error {
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
func (h *Handler) Invoke(c echo.Context) error {
	raw, err := server.ReadBody(c)
	if err != nil {
		return err // the body limit's 413
	}
	var body invokeBody
	if err := server.DecodeJSONReader(bytes.NewReader(raw), &body); err != nil {
		return err
	}
	input, err := capability.ParseInput(body.Input)
	if err != nil {
		return err
	}
	out, err := h.Run(c, c.Param("name"), input, capability.PathBinding)
	if err != nil {
		return err
	}
	setETag(c, out)
	return c.JSON(http.StatusOK, map[string]any{"output": out})
}
