package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/invoiced/invoiced/oauth"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// consentView is the consent page of one authorization request.
type consentView struct {
	ID           string
	ClientName   string
	RedirectHost string
	Username     string
	Role         string
	MayWrite     bool
	Write        bool
}

// ConsentPath is the consent page of an authorization request, followed
// by its id.
const ConsentPath = "/oauth/consent/"

// Consent is the page GET /oauth/consent/{id}: who asks, where it returns
// to, and what it may do, at most what the user's role may. Its form may
// send the browser on to the client's redirect URI, so the page's CSP
// admits that one origin as a form's destination.
func (h *Handler) Consent(c echo.Context, s *Session) error {
	id, err := server.PathID(c, "authorization request")
	if err != nil {
		return err
	}
	cs, err := h.deps.OAuth.ConsentGet(c.Request().Context(), id)
	if err != nil {
		return err
	}
	u, err := url.Parse(cs.RedirectURI)
	if err != nil {
		return err
	}
	dest := u.Scheme + ":"
	host := u.Scheme + ":" + u.Opaque
	if u.Host != "" {
		dest, host = u.Scheme+"://"+u.Host, u.Host
	}
	hd := c.Response().Header()
	hd.Set("Content-Security-Policy", strings.Replace(hd.Get("Content-Security-Policy"), "form-action 'self'", "form-action 'self' "+dest, 1))
	may := oauth.MaxScope(s.User.Role) == oauth.ScopeReadWrite
	d := h.data(c, s, "Connect "+cs.Client.Name)
	d.Data = consentView{ID: cs.ID.String(), ClientName: cs.Client.Name, RedirectHost: host, Username: s.User.Username,
		Role: string(s.User.Role), MayWrite: may, Write: may && cs.Requested == oauth.ScopeReadWrite}
	return h.render(c, http.StatusOK, "consent", d)
}

// ConsentDecide is the form POST /oauth/consent/{id}: approve with the
// scope chosen, or deny; either way the browser returns to the client.
func (h *Handler) ConsentDecide(c echo.Context, s *Session) error {
	id, err := server.PathID(c, "authorization request")
	if err != nil {
		return err
	}
	ctx, base := c.Request().Context(), h.deps.OAuth.Base(c.Request())
	var to string
	switch c.FormValue("decision") {
	case "approve":
		to, err = h.deps.OAuth.Approve(ctx, id, s.User.ID, oauth.Scope(c.FormValue("scope")), base)
	case "deny":
		to, err = h.deps.OAuth.Deny(ctx, id, base)
	default:
		err = problem.Invalid("decision", "approve or deny")
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, to)
}
