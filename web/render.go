package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/vat"
	"github.com/labstack/echo/v4"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// assetVersion is a hash of the static files, appended to their URLs so a
// new binary's browsers fetch new assets while old ones stay cacheable.
var assetVersion = func() string {
	h := sha256.New()
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

type templates struct {
	pages map[string]*template.Template
}

var funcs = template.FuncMap{
	// money is an amount in a column whose currency is stated once:
	// "16,237.50"; amount names its currency: "16,237.50 USD".
	"money":     money.Grouped,
	"amount":    money.Display,
	"asset":     func(name string) string { return "/static/" + name + "?v=" + assetVersion },
	"ago":       ago,
	"hasPrefix": strings.HasPrefix,
	"until":     until,
	"ts":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"iso":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"date":      func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	// qty and bps are a line's quantity and tax rate as the document
	// (PDF) shows them: "1,234", "8.25 %".
	"qty": document.Quantity,
	"bps": document.Percent,
	// unit names a line's unit for its quantity ("hours" for HUR 7.5),
	// vatcat a VAT category ("Reverse charge"), address a party's address
	// on one line with its country's name, as the inbox is in English.
	"unit":    document.English.Unit,
	"vatcat":  func(c vat.Category) string { return c.Name("en") },
	"address": oneLineAddress,
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, fmt.Errorf("dict: odd number of arguments")
		}
		m := make(map[string]any, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
	"deref": func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	},
}

// parseTemplates builds one template set per page: the layout plus the
// page's own file, so block names never collide between pages.
func parseTemplates() (*templates, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	t := &templates{pages: map[string]*template.Template{}}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		files := []string{"templates/layout.html", n}
		partials, _ := fs.Glob(templateFS, "templates/_*.html")
		files = append(files, partials...)
		p, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, files...)
		if err != nil {
			return nil, fmt.Errorf("web: parse %s: %w", n, err)
		}
		t.pages[base] = p
	}
	return t, nil
}

// pageData is what every template receives.
type pageData struct {
	Title string
	Path  string
	// Wide lets the page use the whole window (the chat's three columns).
	Wide    bool
	User    *userView
	CSRF    string
	Notice  string
	Error   string
	Problem *problem.Error
	Data    any
}

type userView struct {
	Username    string
	DisplayName string
	Role        string
}

func (h *Handler) data(c echo.Context, s *Session, title string) *pageData {
	d := &pageData{Title: title, Path: c.Request().URL.Path}
	if s != nil {
		d.CSRF = s.CSRFToken
		d.User = &userView{Username: s.User.Username, DisplayName: s.User.DisplayName, Role: string(s.User.Role)}
	}
	return d
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 instead of half a page.
func (h *Handler) render(c echo.Context, status int, page string, d *pageData) error {
	t, ok := h.tmpl.pages[page]
	if !ok {
		return fmt.Errorf("web: no template %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", d); err != nil {
		return fmt.Errorf("web: render %s: %w", page, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// Static answers GET /static/*: the embedded assets. A versioned URL (see
// asset) never changes content, so it may be cached for a year.
func (h *Handler) Static(c echo.Context) error {
	name := path.Clean("/" + c.Param("*"))
	b, err := staticFS.ReadFile("static" + name)
	if err != nil {
		return echo.ErrNotFound
	}
	hd := c.Response().Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	if c.QueryParam("v") == assetVersion {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	return c.Blob(http.StatusOK, ct, b)
}

// ago says how long ago t was, coarsely: "3 min ago", "2 h ago", "4 d ago".
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d d ago", int(d.Hours()/24))
}

// until says how long until t: "in 3 h", or "expired" once it has passed.
func until(t time.Time) string {
	d := time.Until(t)
	switch {
	case d <= 0:
		return "expired"
	case d < time.Hour:
		return fmt.Sprintf("in %d min", int(d.Minutes())+1)
	case d < 48*time.Hour:
		return fmt.Sprintf("in %d h", int(d.Hours()))
	}
	return fmt.Sprintf("in %d d", int(d.Hours()/24))
}

// oneLineAddress is a on one line: "Hauptstraße 5, 10115 Berlin, Germany".
func oneLineAddress(a party.Address) string {
	parts := slices.Clone(a.Lines)
	if place := strings.TrimSpace(a.Postcode + " " + a.City); place != "" {
		parts = append(parts, place)
	}
	if a.Subdivision != "" {
		parts = append(parts, a.Subdivision)
	}
	if a.Country != "" {
		parts = append(parts, document.English.Country(a.Country))
	}
	return strings.Join(parts, ", ")
}
