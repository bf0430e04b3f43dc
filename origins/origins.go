// Package origins says which browser origins may call an endpoint, and
// answers the ones that may with CORS, so that a web page (a browser-based
// MCP client, the MCP Inspector) can call /mcp and the OAuth endpoints
// with its own token.
//
// A request without an Origin header is not a browser's cross-origin
// request (an SDK, curl, a native app) and passes. A request from a page
// of the service's own origin passes. Any other Origin must be listed in
// the setting (INVOICED_MCP_ALLOWED_ORIGINS); the rest are refused with
// 403, as the MCP transport asks of a server (2025-11-25, "Security
// Warning": validate Origin on every request).
package origins

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
)

// Setting is the environment variable listing the allowed origins.
const Setting = "INVOICED_MCP_ALLOWED_ORIGINS"

// Allowed is the set of origins, besides the service's own, whose pages
// may call an endpoint. The zero value allows none but the service's own.
type Allowed struct {
	// list holds each origin as a browser sends it: lower-case scheme and
	// host, the port only where it is not the scheme's default.
	list []string
}

// Parse reads the setting: origins separated by commas or spaces, each
// scheme://host[:port] (http or https, no path). "*" is refused: a page
// of any site could then drive whatever its visitor's token may do.
func Parse(setting string) (Allowed, error) {
	var a Allowed
	for _, raw := range strings.FieldsFunc(setting, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		o, err := normalize(raw)
		if err != nil {
			return Allowed{}, err
		}
		if !slices.Contains(a.list, o) {
			a.list = append(a.list, o)
		}
	}
	return a, nil
}

func normalize(raw string) (string, error) {
	if raw == "*" {
		return "", errors.New(`"*" is not an origin: list each origin whose pages may call the service, e.g. https://app.example.com`)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin: write scheme://host[:port], e.g. https://app.example.com or http://localhost:6274", raw)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q is not an origin: its port is not a number from 1 to 65535", raw)
		}
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}

// String lists the allowed origins as the setting takes them.
func (a Allowed) String() string { return strings.Join(a.list, ",") }

// Allows reports whether r may be served: it has no Origin, or its Origin
// is the service's own (the host the browser asked for), or one listed.
// The scheme of the service's own origin is not compared: behind a proxy
// that ends TLS the service cannot see it.
func (a Allowed) Allows(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	o, err := normalize(origin)
	if err != nil {
		// "null" (a sandboxed frame, a file) and anything malformed.
		return false
	}
	if u, _ := url.Parse(origin); u != nil && strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return slices.Contains(a.list, o)
}

// CORS is what an endpoint lets pages of the allowed origins do.
type CORS struct {
	// Methods are the methods a page may use, besides OPTIONS.
	Methods []string
	// Headers are the request headers a page may send.
	Headers []string
	// Expose are the response headers a page may read.
	Expose []string
	// Refuse answers a request whose origin is not allowed, with 403;
	// nil returns problem.Forbidden to the error handler (problem+json).
	Refuse func(c echo.Context) error
}

// maxAge is how long a browser may keep a preflight's answer: 2 hours,
// the most Chromium keeps one (Firefox keeps 24 hours).
const maxAge = "7200"

// Middleware checks every request's origin and answers CORS for the
// allowed ones. Mount it with e.Use, limited to the endpoint's paths, not
// on the routes: a preflight (OPTIONS, sent without credentials) must get
// past no authentication, and Echo answers OPTIONS on a path without an
// OPTIONS route itself (204 with Allow), after the global middleware, so
// the preflight's headers set here go out with that answer.
func (a Allowed) Middleware(cfg CORS) echo.MiddlewareFunc {
	methods := strings.Join(cfg.Methods, ", ")
	headers := strings.Join(cfg.Headers, ", ")
	expose := strings.Join(cfg.Expose, ", ")
	refuse := cfg.Refuse
	if refuse == nil {
		refuse = func(echo.Context) error {
			return problem.Forbidden("this origin may not call this endpoint: an admin lists the origins of browser clients in " + Setting)
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r, h := c.Request(), c.Response().Header()
			h.Add("Vary", "Origin")
			if !a.Allows(r) {
				return refuse(c)
			}
			origin := r.Header.Get("Origin")
			switch {
			case origin == "":
			case r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "":
				h.Add("Vary", "Access-Control-Request-Method")
				h.Add("Vary", "Access-Control-Request-Headers")
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Methods", methods)
				h.Set("Access-Control-Allow-Headers", headers)
				h.Set("Access-Control-Max-Age", maxAge)
			default:
				h.Set("Access-Control-Allow-Origin", origin)
				if expose != "" {
					h.Set("Access-Control-Expose-Headers", expose)
				}
			}
			return next(c)
		}
	}
}
