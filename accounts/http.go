package accounts

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves /v1/users and /v1/tokens, for admins only (app's route
// table puts identity.RequireRole(admin) in front of each route).
type Handler struct {
	Svc *Service
}

func actor(c echo.Context) (Actor, error) {
	p, err := identity.RequestPrincipal(c)
	return ActorOf(p, capability.PathREST), err
}

func userJSON(c echo.Context, u *identity.User) error {
	c.Response().Header().Set("ETag", etag.FromVersion(u.Version))
	return c.JSON(http.StatusOK, u)
}

// List answers GET /v1/users?cursor=&limit=.
func (h *Handler) List(c echo.Context) error {
	p, err := server.PageQuery(c)
	if err != nil {
		return err
	}
	list, err := h.Svc.List(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// Get answers GET /v1/users/{id}.
func (h *Handler) Get(c echo.Context) error {
	id, err := server.PathID(c, "user")
	if err != nil {
		return err
	}
	u, err := h.Svc.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return userJSON(c, u)
}

// userPatchBody is PATCH /v1/users/{id}'s body. Members are raw so that
// null is told from absent: null clears the email address and is refused
// for the others, which cannot be empty.
type userPatchBody struct {
	DisplayName json.RawMessage `json:"display_name"`
	Role        json.RawMessage `json:"role"`
	Disabled    json.RawMessage `json:"disabled"`
	Email       json.RawMessage `json:"email"`
}

// member decodes one present member into v, 422 naming field otherwise.
func member(raw json.RawMessage, field, want string, v any) (bool, error) {
	if raw == nil {
		return false, nil
	}
	if string(raw) == "null" || json.Unmarshal(raw, v) != nil {
		return false, problem.Invalid(field, "must be %s", want)
	}
	return true, nil
}

func (b userPatchBody) patch() (Patch, error) {
	var (
		p        Patch
		name     string
		role     string
		disabled bool
	)
	if ok, err := member(b.DisplayName, "display_name", "a string", &name); err != nil {
		return p, err
	} else if ok {
		p.DisplayName = &name
	}
	if ok, err := member(b.Role, "role", "one of clerk, approver, admin", &role); err != nil {
		return p, err
	} else if ok {
		r := identity.Role(role)
		p.Role = &r
	}
	if ok, err := member(b.Disabled, "disabled", "a boolean", &disabled); err != nil {
		return p, err
	} else if ok {
		p.Disabled = &disabled
	}
	if b.Email != nil {
		p.SetEmail = true
		if string(b.Email) != "null" {
			var e string
			if err := json.Unmarshal(b.Email, &e); err != nil {
				return p, problem.Invalid("email", "must be an email address or null")
			}
			p.Email = &e
		}
	}
	return p, nil
}

// Update answers PATCH /v1/users/{id} {display_name, role, disabled,
// email}, honouring If-Match.
func (h *Handler) Update(c echo.Context) error {
	by, err := actor(c)
	if err != nil {
		return err
	}
	id, err := server.PathID(c, "user")
	if err != nil {
		return err
	}
	ifMatch, err := etag.ReadIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	raw, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	if !utf8.Valid(raw) {
		return problem.Invalid("body", "must be valid UTF-8")
	}
	var body userPatchBody
	if err := server.DecodeJSONReader(bytes.NewReader(raw), &body); err != nil {
		return err
	}
	p, err := body.patch()
	if err != nil {
		return err
	}
	u, err := h.Svc.Update(c.Request().Context(), by, id, ifMatch, p)
	if err != nil {
		return err
	}
	return userJSON(c, u.User)
}

// Tokens answers GET /v1/users/{id}/tokens?cursor=&limit=.
func (h *Handler) Tokens(c echo.Context) error {
	id, err := server.PathID(c, "user")
	if err != nil {
		return err
	}
	p, err := server.PageQuery(c)
	if err != nil {
		return err
	}
	list, err := h.Svc.Tokens(c.Request().Context(), id, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// TokenRevoke answers POST /v1/tokens/{id}/revoke with the token as it
// now is.
func (h *Handler) TokenRevoke(c echo.Context) error {
	by, err := actor(c)
	if err != nil {
		return err
	}
	id, err := server.PathID(c, "token")
	if err != nil {
		return err
	}
	t, err := h.Svc.TokenRevoke(c.Request().Context(), by, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}
