package app

import (
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/invoiced/invoiced/accounts"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability/caphttp"
	"github.com/invoiced/invoiced/idempotency"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/mcp"
	"github.com/invoiced/invoiced/oauth"
	"github.com/invoiced/invoiced/openapi"
	"github.com/invoiced/invoiced/reminders"
	"github.com/invoiced/invoiced/schedules"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/sending"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/web"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/labstack/echo/v4"
)

// Routes mounts every route of the service: the one route table, an area
// to a function below, in the order Routes calls them. Every route must be
// in openapi/openapi.yaml (tested). get mounts a GET with its HEAD; the
// event streams are GET alone.
func (a *App) Routes(e *echo.Echo) {
	// Authentication is a global middleware limited to /v1 rather than
	// group middleware: Echo answers 404 instead of 405 for a known path
	// with the wrong method when a group has middleware. The chat
	// authenticates a bearer token in the statement that opens its turn.
	e.Use(onlyUnder("/v1/", identity.Authenticate(a.pool, a.web.SessionLookup, steploop.DefersBearer)))
	// After authentication: keys are scoped per principal. The chat's
	// turn and its stop run outside one transaction (ADR-0020): a turn
	// streams, and a stop waits for the run it stops to end.
	e.Use(onlyUnder("/v1/", idempotency.Middleware(a.pool, "/v1/chat", "/v1/chat/:id/stop")))
	e.Use(headTakesGetsRoute(e))

	get(e, "/openapi.json", openapi.Handler)
	v1 := e.Group("/v1")
	a.userRoutes(v1)
	a.invoiceRoutes(v1)
	a.sellerRoutes(v1)
	a.scheduleRoutes(v1)
	a.approvalRoutes(e, v1)
	a.webhookRoutes(v1)
	a.oauthRoutes(e)
	a.mcpRoutes(e)
	a.chatRoutes(e, v1)
	a.inboxRoutes(e)
}

// userRoutes mounts who is calling, and user administration: admins only
// (DESIGN.md §7).
func (a *App) userRoutes(v1 *echo.Group) {
	me := &identity.Handler{DB: a.pool}
	get(v1, "/me", me.Me)

	admins := identity.RequireRole(identity.RoleAdmin)
	us := &accounts.Handler{Svc: a.accounts}
	get(v1, "/users", us.List, admins)
	get(v1, "/users/:id", us.Get, admins)
	v1.PATCH("/users/:id", us.Update, admins)
	get(v1, "/users/:id/tokens", us.Tokens, admins)
	v1.POST("/tokens/:id/revoke", us.TokenRevoke, admins)
}

// invoiceRoutes mounts the capabilities by name and the invoicing
// resources, which run the same capabilities.
func (a *App) invoiceRoutes(v1 *echo.Group) {
	caps := &caphttp.Handler{Registry: a.caps}
	get(v1, "/capabilities", caps.List)
	v1.POST("/capabilities/:name/invoke", caps.Invoke)

	inv := &invoices.Handler{Caps: caps, DB: a.pool}
	v1.POST("/customers", inv.CustomerCreate)
	get(v1, "/customers", inv.CustomerList)
	get(v1, "/customers/:id", inv.CustomerGet)
	v1.PATCH("/customers/:id", inv.CustomerUpdate)
	v1.POST("/invoices", inv.InvoiceCreate)
	get(v1, "/invoices", inv.InvoiceList)
	get(v1, "/invoices/:id", inv.InvoiceGet)
	get(v1, "/invoices/:id/pdf", inv.InvoicePDF)
	get(v1, "/invoices/:id/einvoice", inv.InvoiceEInvoice)
	v1.PATCH("/invoices/:id", inv.InvoiceUpdate)
	v1.DELETE("/invoices/:id", inv.InvoiceDelete)
	v1.POST("/invoices/:id/issue", inv.InvoiceIssue)
	v1.POST("/invoices/:id/void", inv.InvoiceVoid)
	v1.POST("/invoices/:id/mark-paid", inv.InvoiceMarkPaid)
	v1.POST("/invoices/:id/credit-notes", inv.CreditNoteIssue)
	get(v1, "/invoices/:id/credit-notes", inv.CreditNoteList)
	get(v1, "/credit-notes/:id", inv.CreditNoteGet)
	get(v1, "/credit-notes/:id/pdf", inv.CreditNotePDF)
	get(v1, "/credit-notes/:id/einvoice", inv.CreditNoteEInvoice)
	v1.POST("/invoices/:id/payments", inv.PaymentRecord)
	get(v1, "/invoices/:id/payments", inv.PaymentList)
	v1.POST("/payments/:id/reverse", inv.PaymentReverse)
	get(v1, "/reports/receivables", inv.Receivables)

	snd := &sending.Handler{Inv: inv}
	v1.POST("/invoices/:id/send", snd.InvoiceSend)
	get(v1, "/invoices/:id/sendings", snd.InvoiceSendings)
	v1.POST("/credit-notes/:id/send", snd.CreditNoteSend)
	get(v1, "/credit-notes/:id/sendings", snd.CreditNoteSendings)

	// Every signed-in user reads the reminder settings; admins change
	// them (the service checks, as for the seller).
	rem := &reminders.Handler{Svc: a.reminders, Inv: inv}
	get(v1, "/reminders/settings", rem.Settings)
	v1.PUT("/reminders/settings", rem.SetSettings, identity.RequireRole(identity.RoleAdmin))
	get(v1, "/reminders/upcoming", rem.Upcoming)
	v1.POST("/invoices/:id/remind", rem.Send)
	v1.PUT("/invoices/:id/dispute", rem.Dispute)
	v1.PUT("/customers/:id/hold", rem.Hold)
}

// sellerRoutes mounts who issues the invoices: every signed-in user reads
// it (a clerk sees what an invoice will say of the seller); admins change
// it (the service checks, for the CLI too).
func (a *App) sellerRoutes(v1 *echo.Group) {
	s := &seller.Handler{Svc: a.sellers}
	get(v1, "/seller", s.Get)
	v1.PUT("/seller", s.Put, identity.RequireRole(identity.RoleAdmin))
}

// approvalRoutes mounts approval requests and their decisions, and the
// approval policy (ADR-0014), which is the admins'.
func (a *App) approvalRoutes(e *echo.Echo, v1 *echo.Group) {
	ap := &approvals.Handler{Svc: a.approvalSvc, Hub: a.approvalHub, Heartbeat: a.eventsHeartbeat}
	get(v1, "/approvals", ap.List)
	v1.GET("/approvals/events", ap.Events)
	get(v1, "/approvals/:id", ap.Get)
	v1.POST("/approvals/:id/approve", ap.Approve)
	v1.POST("/approvals/:id/deny", ap.Deny)
	v1.POST("/approvals/:id/cancel", ap.Cancel)
	dg := &approvals.DelegationHandler{Svc: a.approvalSvc}
	v1.POST("/delegations", dg.Create)
	get(v1, "/delegations", dg.List)
	v1.POST("/delegations/:id/end", dg.End)
	// Event streams and long polls end when shutdown begins instead of
	// holding it for the whole grace period.
	e.Server.RegisterOnShutdown(a.approvalHub.Close)

	admins := identity.RequireRole(identity.RoleAdmin)
	pol := &approvals.PolicyHandler{Svc: a.approvalSvc}
	get(v1, "/approval-policy", pol.Get, admins)
	v1.POST("/approval-policy/rules", pol.SetRule, admins)
	v1.DELETE("/approval-policy/rules/:id", pol.DeleteRule, admins)

	// Standing allowances: granted through the gate, revoked by approvers
	// and admins (the service checks, for the CLI too).
	al := &allowances.Handler{Caps: &caphttp.Handler{Registry: a.caps}, Svc: a.allowances}
	v1.POST("/allowances", al.Grant)
	get(v1, "/allowances", al.List)
	get(v1, "/allowances/:id", al.Get)
	v1.POST("/allowances/:id/revoke", al.Revoke)
}

// scheduleRoutes mounts the recurring invoices: created and listed by
// capability, deleted by writers (the service checks).
func (a *App) scheduleRoutes(v1 *echo.Group) {
	sh := &schedules.Handler{Caps: &caphttp.Handler{Registry: a.caps}, Svc: a.schedules}
	v1.POST("/schedules", sh.Create)
	get(v1, "/schedules", sh.List)
	get(v1, "/schedules/:id", sh.Get)
	v1.PATCH("/schedules/:id", sh.Update)
	v1.DELETE("/schedules/:id", sh.Delete)
	get(v1, "/schedules/:id/runs", sh.Runs)
}

// webhookRoutes mounts the webhook endpoints and their deliveries: admins
// only (the service checks, for the CLI too).
func (a *App) webhookRoutes(v1 *echo.Group) {
	wh := &webhooks.Handler{Svc: a.webhooks}
	v1.POST("/webhook-endpoints", wh.Add)
	get(v1, "/webhook-endpoints", wh.List)
	get(v1, "/webhook-endpoints/:id", wh.Get)
	v1.POST("/webhook-endpoints/:id/disable", wh.Disable)
	v1.POST("/webhook-endpoints/:id/enable", wh.Enable)
	v1.POST("/webhook-endpoints/:id/rotate-secret", wh.RotateSecret)
	get(v1, "/webhook-endpoints/:id/deliveries", wh.Deliveries)
	get(v1, "/webhook-deliveries/:id", wh.Delivery)
	v1.POST("/webhook-deliveries/:id/redeliver", wh.Redeliver)
}

// oauthRoutes mounts the authorization server of /mcp and the resource's
// metadata (ADR-0023): public, outside /v1; its consent page is the
// inbox's (inboxRoutes).
func (a *App) oauthRoutes(e *echo.Echo) {
	// The endpoints a client fetches check origins and answer CORS as
	// /mcp does, for every method: a preflight carries no credential.
	e.Use(onlyPaths(oauth.FetchedPaths, a.allowedOrigins.Middleware(oauth.CORS())))
	o := a.oauthHandler()
	get(e, "/.well-known/oauth-protected-resource", o.ResourceMetadata)
	get(e, "/.well-known/oauth-protected-resource/mcp", o.ResourceMetadata)
	get(e, "/.well-known/oauth-authorization-server", o.ServerMetadata)
	e.POST("/oauth/register", o.Register)
	get(e, "/oauth/authorize", o.Authorize)
	e.POST("/oauth/token", o.Token)
	e.POST("/oauth/revoke", o.Revoke)
}

func (a *App) oauthHandler() *oauth.Handler {
	return &oauth.Handler{Svc: a.oauth, ConsentPath: web.ConsentPath}
}

// mcpRoutes mounts MCP (ADR-0015): JSON-RPC over Streamable HTTP, outside
// /v1 and REST. Bearer tokens only (nil: no inbox cookie, so no CSRF):
// API tokens and the OAuth access tokens issued for it, whose 401 says
// where to get one (Challenge);
// approvers get a server without tools; its GET is a stream, without
// HEAD. Sessions close when shutdown begins, so their open streams do not
// hold it; every write to a client has a deadline (BoundWrites). The
// origin check and CORS come first, for every method: a preflight
// (OPTIONS, which Echo answers) carries no token.
func (a *App) mcpRoutes(e *echo.Echo) {
	e.Use(onlyPath("/mcp", a.allowedOrigins.Middleware(mcp.CORS())))
	e.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, "/mcp",
		echo.WrapHandler(a.mcp.Handler()), a.oauthHandler().Challenge, identity.Authenticate(a.pool, nil, nil, a.oauth.Scheme()),
		a.mcp.RecheckStreams, a.mcp.BoundWrites)
	e.Server.RegisterOnShutdown(a.mcp.Shutdown)
}

// chatRoutes mounts the step loop (ADR-0002): clerks and admins chat; an
// approver reads and decides approvals only (DESIGN.md §7). Running turns
// end when shutdown begins: they store what they have and release their
// conversations instead of holding the grace period.
func (a *App) chatRoutes(e *echo.Echo, v1 *echo.Group) {
	e.Server.RegisterOnShutdown(a.chat.Shutdown)
	chatters := identity.RequireRole(identity.RoleClerk, identity.RoleAdmin)
	v1.POST("/chat", a.chat.Chat, chatters)
	v1.GET("/chat/:id/stream", a.chat.Resume, chatters)
	v1.POST("/chat/:id/stop", a.chat.Stop, chatters)
	get(v1, "/conversations", a.chat.ConversationList, chatters)
	get(v1, "/conversations/:id", a.chat.ConversationGet, chatters)
}

// inboxRoutes mounts the back-office inbox: HTML pages outside /v1
// (DESIGN.md §6), never problem+json. Every page carries the security
// headers; Page sends a browser without a live session to sign in and
// refuses a form without the session's CSRF token.
func (a *App) inboxRoutes(e *echo.Echo) {
	w := a.web
	sec := w.SecurityHeaders
	get(e, "/", w.Home, sec)
	get(e, "/static/*", w.Static)
	get(e, "/login", w.LoginForm, sec)
	e.POST("/login", w.Login, sec)
	get(e, "/login/link", w.SignInLinkForm, sec)
	e.POST("/login/link", w.SignInLink, sec)
	e.POST("/logout", w.Page(w.Logout), sec)
	get(e, "/inbox", w.Page(w.Inbox), sec)
	get(e, "/approvals/:id", w.Page(w.Approval), sec)
	get(e, "/approvals/:id/conversation", w.Page(w.RequestConversation), sec)
	e.POST("/approvals/:id/approve", w.Page(w.Decide(approvals.DecisionApprove)), sec)
	e.POST("/approvals/:id/deny", w.Page(w.Decide(approvals.DecisionDeny)), sec)
	get(e, "/delegations", w.Page(w.Delegations), sec)
	e.POST("/delegations", w.Page(w.DelegationCreate), sec)
	e.POST("/delegations/:id/end", w.Page(w.DelegationEnd), sec)
	e.POST("/allowances/:id/revoke", w.Page(w.AllowanceRevoke), sec)
	get(e, "/invoices", w.Page(w.Invoices), sec)
	get(e, "/invoices/:id", w.Page(w.Invoice), sec)
	get(e, "/invoices/:id/pdf", w.Page(w.InvoicePDF), sec)
	get(e, "/chat", w.Page(w.Chat), sec)
	get(e, "/chat/:id", w.Page(w.Chat), sec)
	get(e, web.ConsentPath+":id", w.Page(w.Consent), sec)
	e.POST(web.ConsentPath+":id", w.Page(w.ConsentDecide), sec)
}

// router is where routes are mounted: the server, or its /v1 group.
type router interface {
	Match(methods []string, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) []*echo.Route
}

// get mounts h for GET and for HEAD, which is GET without the body (RFC
// 9110 §9.3.2): h runs as for GET and net/http sends its headers, with
// Content-Length when the whole body fit net/http's buffer, as a GET
// would, and drops the body. An event stream has no end to measure and
// would hold the connection, so its GET is mounted alone.
func get(r router, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.Match([]string{http.MethodGet, http.MethodHead}, path, h, m...)
}

// headTakesGetsRoute answers 405 to a HEAD the router gave another route
// than the path's GET, naming what that route allows. Echo tries a
// sibling route for a method the matched route lacks, so HEAD
// /v1/approvals/events (a stream: GET alone) would run HEAD
// /v1/approvals/{id} with the id "events", a 404.
func headTakesGetsRoute(e *echo.Echo) echo.MiddlewareFunc {
	allow := sync.OnceValue(func() map[string]string {
		methods := map[string][]string{}
		for _, r := range e.Routes() {
			methods[r.Path] = append(methods[r.Path], r.Method)
		}
		out := map[string]string{}
		for path, ms := range methods {
			// Echo's order, as its own Allow headers have it.
			order := []string{http.MethodOptions}
			for _, m := range []string{http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPatch,
				http.MethodPost, http.MethodPut, http.MethodTrace} {
				if slices.Contains(ms, m) {
					order = append(order, m)
				}
			}
			out[path] = strings.Join(order, ", ")
		}
		return out
	})
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Method != http.MethodHead {
				return next(c)
			}
			probe := e.AcquireContext()
			defer e.ReleaseContext(probe)
			probe.Reset(c.Request(), nil)
			e.Router().Find(http.MethodGet, echo.GetPath(c.Request()), probe)
			if get := probe.Path(); get != c.Path() {
				if a, ok := allow()[get]; ok {
					c.Response().Header().Set(echo.HeaderAllow, a)
					return echo.ErrMethodNotAllowed
				}
			}
			return next(c)
		}
	}
}

// onlyPath applies m to the requests for path alone.
func onlyPath(path string, m echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		wrapped := m(next)
		return func(c echo.Context) error {
			if c.Request().URL.Path == path {
				return wrapped(c)
			}
			return next(c)
		}
	}
}

// onlyPaths applies m to requests for one of paths.
func onlyPaths(paths []string, m echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		wrapped := m(next)
		return func(c echo.Context) error {
			if slices.Contains(paths, c.Request().URL.Path) {
				return wrapped(c)
			}
			return next(c)
		}
	}
}

// onlyUnder applies m to requests whose path starts with prefix.
func onlyUnder(prefix string, m echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		wrapped := m(next)
		return func(c echo.Context) error {
			if strings.HasPrefix(c.Request().URL.Path, prefix) {
				return wrapped(c)
			}
			return next(c)
		}
	}
}
