package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/internal/nodetest"
	"github.com/invoiced/invoiced/openapi"
	"github.com/invoiced/invoiced/openapi/openapitest"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

func TestDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Document()
	require.NoError(t, err)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.NoError(t, doc.Validate(context.Background()))
}

var param = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// openAPIPath turns an Echo route path into an OpenAPI path template.
func openAPIPath(p string) string {
	p = param.ReplaceAllString(p, "{$1}")
	return strings.Replace(p, "*", "{path}", 1)
}

// TestEveryRouteDocumented builds the real route table (app.New + Routes)
// and checks each route and method is in the document, and each path's
// methods are the ones the document implies: its operations, and HEAD
// beside every GET that is not an event stream. Echo's Allow header (on
// OPTIONS and 405) names the methods routed, so it says what the
// document says.
func TestEveryRouteDocumented(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Document()
	require.NoError(t, err)

	pool := storetest.Pool(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.New(context.Background(), app.Config{}, pool, log)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	e := server.New(server.DefaultConfig(), log, func(context.Context) error { return nil })
	a.Routes(e)

	routes := e.Routes()
	require.NotEmpty(t, routes)
	var missing []string
	seen := 0
	routed := map[string][]string{} // path → methods, OPTIONS included
	for _, r := range routes {
		if r.Method == echo.RouteNotFound {
			continue
		}
		seen++
		p := openAPIPath(r.Path)
		if routed[p] == nil {
			routed[p] = []string{http.MethodOptions}
		}
		routed[p] = append(routed[p], r.Method)
		item := doc.Paths.Value(p)
		if r.Method == http.MethodHead && item != nil && item.Get != nil {
			continue // HEAD is its GET's (checked below)
		}
		if item == nil || item.GetOperation(r.Method) == nil {
			missing = append(missing, r.Method+" "+p)
		}
	}
	require.Empty(t, missing, "routes registered but not in openapi/openapi.yaml")
	require.Greater(t, seen, 20)
	var differ []string
	for p, item := range doc.Paths.Map() {
		got := routed[p]
		slices.Sort(got)
		if want := openapitest.Allow(item); !slices.Equal(got, want) {
			differ = append(differ, fmt.Sprintf("%s: routed %v, the document makes %v", p, got, want))
		}
	}
	require.Empty(t, differ, "a path's methods (its Allow header) differ from the document's")

	// A deliberately unknown route is reported, so the check can fail.
	require.Nil(t, doc.Paths.Value("/v1/nothing-here"))
}

func TestServedAsJSON(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{})
	r := h.Do(t, http.MethodGet, "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m))
	require.Equal(t, "3.1.0", m["openapi"])
	doc, err := openapi3.NewLoader().LoadFromData(r.Body)
	require.NoError(t, err)
	require.NotNil(t, doc.Paths.Value("/v1/invoices/{id}/issue").Post)
}

// TestEveryOperationListsItsAnswers holds the document to the rules that
// let openapitest check every exchange: an operationId on each operation,
// no blanket default response (it would declare every status), and each
// response declaring the X-Request-Id every response carries; under /v1,
// the 401 and 503 that any authenticated request can meet.
func TestEveryOperationListsItsAnswers(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Document()
	require.NoError(t, err)
	ids := map[string]string{}
	var bad []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			what := method + " " + path
			if op.OperationID == "" {
				bad = append(bad, what+": no operationId")
			} else if other, dup := ids[op.OperationID]; dup {
				bad = append(bad, what+": operationId "+op.OperationID+" is also "+other+"'s")
			}
			ids[op.OperationID] = what
			if op.Responses.Default() != nil {
				bad = append(bad, what+": a default response")
			}
			for status, r := range op.Responses.Map() {
				if r.Value.Headers["X-Request-Id"] == nil {
					bad = append(bad, what+": response "+status+" without X-Request-Id")
				}
			}
			if strings.HasPrefix(path, "/v1/") {
				for _, status := range []int{http.StatusUnauthorized, http.StatusServiceUnavailable} {
					if op.Responses.Status(status) == nil {
						bad = append(bad, fmt.Sprintf("%s: no %d", what, status))
					}
				}
			}
			if takesIfMatch(op) {
				if !answersCode(op, http.StatusBadRequest, "IF_MATCH_INVALID") {
					bad = append(bad, what+": takes If-Match but its 400 lists no IF_MATCH_INVALID")
				}
				if !answersCode(op, http.StatusPreconditionFailed, "VERSION_MISMATCH") {
					bad = append(bad, what+": takes If-Match but its 412 lists no VERSION_MISMATCH")
				}
			}
		}
	}
	require.Empty(t, bad)
	require.Greater(t, len(ids), 30)
}

// TestRedoclyLint runs Redocly CLI (pinned in package-lock.json) over the
// document with redocly.yaml's rules: it must report no error. A copy
// missing an operationId shows the lint can fail.
func TestRedoclyLint(t *testing.T) {
	t.Parallel()
	_, dir := nodetest.Install(t, ".", "@redocly/cli/package.json")
	lint := func(file string) (string, error) {
		cmd := exec.Command("npx", "--no-install", "redocly", "lint", "--config", filepath.Join(dir, "redocly.yaml"), "--format", "stylish", file)
		cmd.Dir = dir
		// No usage data sent, no update check.
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := lint("openapi.yaml")
	require.NoError(t, err, "redocly lint openapi/openapi.yaml:\n%s", out)
	require.Contains(t, out, "Your API description is valid")

	broken := filepath.Join(t.TempDir(), "openapi.yaml")
	require.NoError(t, os.WriteFile(broken, bytes.Replace(openapi.Source(), []byte("      operationId: get-me\n"), nil, 1), 0o600))
	out, err = lint(broken)
	require.Error(t, err, "a document without an operationId passed:\n%s", out)
	require.Contains(t, out, "operation-operationId")
}

func takesIfMatch(op *openapi3.Operation) bool {
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInHeader && p.Value.Name == "If-Match" {
			return true
		}
	}
	return false
}

// answersCode says whether op's response for status is a problem whose
// code may be code.
func answersCode(op *openapi3.Operation, status int, code string) bool {
	r := op.Responses.Status(status)
	if r == nil || r.Value == nil {
		return false
	}
	mt := r.Value.Content.Get("application/problem+json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return false
	}
	for _, s := range append([]*openapi3.SchemaRef{mt.Schema}, mt.Schema.Value.AllOf...) {
		if s.Value == nil {
			continue
		}
		if c := s.Value.Properties["code"]; c != nil && c.Value != nil && slices.Contains(c.Value.Enum, any(code)) {
			return true
		}
	}
	return false
}
