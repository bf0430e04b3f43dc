package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/invoiced/invoiced/origins"
	"github.com/invoiced/invoiced/problem"
	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Handler serves the authorization server's endpoints and the resource's
// metadata. Its errors are OAuth's JSON (RFC 6749 §5.2), the format every
// OAuth client reads, not problem+json.
type Handler struct {
	Svc *Service
	// ConsentPath is the inbox page an authorization request waits on,
	// followed by its id.
	ConsentPath string
}

// ResourceMetadata answers GET /.well-known/oauth-protected-resource
// (and its /mcp form): the resource and who issues its tokens (RFC 9728).
func (h *Handler) ResourceMetadata(c echo.Context) error {
	r := c.Request()
	return c.JSON(http.StatusOK, &oauthex.ProtectedResourceMetadata{
		Resource:               h.Svc.Resource(r),
		AuthorizationServers:   []string{h.Svc.Base(r)},
		ScopesSupported:        scopesSupported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "invoiced",
	})
}

// serverMetadata is RFC 8414's document, as much of it as this server
// has (oauthex.AuthServerMeta would send an empty jwks_uri).
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethods          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
}

// ServerMetadata answers GET /.well-known/oauth-authorization-server.
func (h *Handler) ServerMetadata(c echo.Context) error {
	base := h.Svc.Base(c.Request())
	none := []string{"none"}
	return c.JSON(http.StatusOK, &serverMetadata{
		Issuer:                            base,
		AuthorizationEndpoint:             base + "/oauth/authorize",
		TokenEndpoint:                     base + "/oauth/token",
		RegistrationEndpoint:              base + "/oauth/register",
		RevocationEndpoint:                base + "/oauth/revoke",
		ScopesSupported:                   scopesSupported,
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethods:          none,
		RevocationEndpointAuthMethods:     none,
		CodeChallengeMethodsSupported:     []string{"S256"},
		ClientIDMetadataDocumentSupported: true,
		IssParameterSupported:             true,
	})
}

// maxRegistrationBytes bounds a registration request.
const maxRegistrationBytes = 16 << 10

// Register answers POST /oauth/register (RFC 7591) with 201 and the
// client as registered.
func (h *Handler) Register(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxRegistrationBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxRegistrationBytes {
		return oauthError(c, &Error{Code: "invalid_client_metadata", Description: fmt.Sprintf("the request is over %d bytes", maxRegistrationBytes)})
	}
	var m oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return oauthError(c, &Error{Code: "invalid_client_metadata", Description: "the body is not a JSON object of client metadata"})
	}
	out, err := h.Svc.Register(c.Request().Context(), &m)
	if err != nil {
		return oauthError(c, err)
	}
	noStore(c)
	return c.JSON(http.StatusCreated, out)
}

// Authorize answers GET /oauth/authorize: the request waits on the
// inbox's consent page, where the user signs in if they have not.
func (h *Handler) Authorize(c echo.Context) error {
	q := c.QueryParams()
	base := h.Svc.Base(c.Request())
	a, err := h.Svc.Authorize(c.Request().Context(), AuthorizeRequest{
		ResponseType: q.Get("response_type"), ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"),
		State: q.Get("state"), Scope: q.Get("scope"), CodeChallenge: q.Get("code_challenge"),
		CodeChallengeMethod: q.Get("code_challenge_method"), Resource: q["resource"],
	}, base)
	var oe *Error
	if errors.As(err, &oe) && oe.Redirect() != "" {
		return c.Redirect(http.StatusFound, oe.Redirect())
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusFound, h.ConsentPath+a.ID.String())
}

// Token answers POST /oauth/token (form encoded).
func (h *Handler) Token(c echo.Context) error {
	f, err := c.FormParams()
	if err != nil {
		return oauthError(c, &Error{Code: "invalid_request", Description: "the body must be application/x-www-form-urlencoded"})
	}
	out, err := h.Svc.Token(c.Request().Context(), f, h.Svc.Base(c.Request()))
	if err != nil {
		return oauthError(c, err)
	}
	noStore(c)
	return c.JSON(http.StatusOK, out)
}

// Revoke answers POST /oauth/revoke (RFC 7009): 200 whether or not the
// token was known.
func (h *Handler) Revoke(c echo.Context) error {
	f, err := c.FormParams()
	if err != nil {
		return oauthError(c, &Error{Code: "invalid_request", Description: "the body must be application/x-www-form-urlencoded"})
	}
	if err := h.Svc.Revoke(c.Request().Context(), f.Get("token"), f.Get("client_id")); err != nil {
		return oauthError(c, err)
	}
	return c.NoContent(http.StatusOK)
}

// oauthError writes err as OAuth's error JSON: 400, or 401 for
// invalid_client (RFC 6749 §5.2). Anything else goes to the error handler.
func oauthError(c echo.Context, err error) error {
	var oe *Error
	if !errors.As(err, &oe) {
		return err
	}
	status := http.StatusBadRequest
	if oe.Code == "invalid_client" {
		status = http.StatusUnauthorized
	}
	noStore(c)
	return c.JSON(status, oe)
}

// FetchedPaths are the endpoints a client fetches (a page, with CORS),
// as opposed to /oauth/authorize and the consent page, which its user's
// browser navigates to.
var FetchedPaths = []string{
	"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
	"/.well-known/oauth-authorization-server", "/oauth/register", "/oauth/token", "/oauth/revoke",
}

// CORS is what pages of the allowed origins (origins.Allowed, the same
// as /mcp's) may do at FetchedPaths: a browser-based MCP client discovers,
// registers, and exchanges and revokes tokens from its own page. Its
// discovery sends Mcp-Protocol-Version. An origin not allowed is refused
// with 403 in OAuth's error JSON.
func CORS() origins.CORS {
	return origins.CORS{
		Methods: []string{http.MethodGet, http.MethodPost},
		Headers: []string{"Content-Type", "Authorization", "Mcp-Protocol-Version"},
		Refuse: func(c echo.Context) error {
			return c.JSON(http.StatusForbidden, &Error{Code: "access_denied",
				Description: "pages of this origin may not call this endpoint (an admin lists browser clients' origins in " + origins.Setting + ")"})
		},
	}
}

// noStore keeps tokens and errors out of caches (RFC 6749 §5.1).
func noStore(c echo.Context) {
	c.Response().Header().Set("Cache-Control", "no-store")
}

// Challenge is route middleware for /mcp: a 401 names where the
// resource's metadata is (RFC 9728 §5.1), and says invalid_token when a
// token was sent (RFC 6750 §3.1), so a client starts its OAuth flow
// rather than guessing.
func (h *Handler) Challenge(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if pe, ok := problem.As(err); ok && pe.Status == http.StatusUnauthorized {
			v := fmt.Sprintf("Bearer resource_metadata=%q, scope=%q", h.Svc.ResourceMetadataURL(c.Request()), "read write")
			if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
				v += `, error="invalid_token", error_description="the access token is missing, expired or revoked"`
			}
			c.Response().Header().Set("WWW-Authenticate", v)
		}
		return err
	}
}
