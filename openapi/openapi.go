// Package openapi embeds the OpenAPI 3.1 document of every route and serves
// it as /openapi.json. The document is written by hand (openapi.yaml); a
// test checks that every route the service registers is in it.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

//go:embed openapi.yaml
var source []byte

// Source returns the document as written (YAML).
func Source() []byte { return source }

var load = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(source)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	return doc, nil
})

// Document returns the parsed document.
func Document() (*openapi3.T, error) { return load() }

var jsonDoc = sync.OnceValues(func() ([]byte, error) {
	doc, err := load()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: marshal: %w", err)
	}
	return b, nil
})

// Handler serves GET /openapi.json.
func Handler(c echo.Context) error {
	b, err := jsonDoc()
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}
