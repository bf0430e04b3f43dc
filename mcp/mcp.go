// Package mcp serves the capabilities to Model Context Protocol clients at
// /mcp (Streamable HTTP, stateful sessions): each capability is a tool
// behind the same registry and gates as every other path, bound calls ask
// the user through elicitation (ADR-0005's wait mode) or answer
// CONFIRMATION_REQUIRED, consequential calls answer APPROVAL_REQUIRED with
// an approval resource a client can subscribe to, and invoices, customers
// and approvals are readable resources. ADR-0015 says how sessions behave
// behind several replicas.
package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/modelcontextprotocol/go-sdk/auth"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for Options.
const (
	// DefaultSessionTimeout closes a session after 30 minutes without a
	// request: a session costs about 5 KB and a goroutine, and a client
	// that comes back re-initializes (ADR-0015), so memory wins over
	// keeping a forgotten window's session.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultHeartbeat is how often an open GET stream re-checks its
	// credential (ADR-0011 #20).
	DefaultHeartbeat = 15 * time.Second
)

// Options tune the endpoint; zero fields take the defaults.
type Options struct {
	// SessionTimeout closes idle sessions; 0 means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// ConfirmTTL is how long a bound call's confirmation, and so its
	// elicitation, waits for the user; 0 means confirm.DefaultTTL.
	ConfirmTTL time.Duration
	// Heartbeat is how often a GET stream re-checks its credential, and
	// how old a credential may be before a call acts on it; 0 means
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a client (BoundWrites); 0 means
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Config is what the endpoint runs on.
type Config struct {
	Options
	// Registry is the capability registry every path runs through.
	Registry *capability.Registry
	// Approvals reads approval requests (the approval resources).
	Approvals *approvals.Service
	// Hub announces approval changes from every replica.
	Hub *approvals.Hub
	// Confirmations stores the confirmations of bound calls (the table the
	// step loop uses, so one sweep serves both).
	Confirmations confirm.Registry
	// Log receives failures; nil discards them.
	Log *slog.Logger
	// Version is the binary's, which initialize reports in serverInfo;
	// "" reports "dev", as an unstamped build calls itself.
	Version string
}

// Service is the MCP endpoint of one process.
type Service struct {
	cfg      Config
	risks    map[string]capability.Risk
	wait     *confirm.Controller
	twoPhase *confirm.Controller
	// writers serves clerks and admins (tools, resources, prompts);
	// readers serves approvers, who get no tools (DESIGN.md §7);
	// lookers serves clerks and admins whose credential allows reads
	// alone (an OAuth grant of scope read): read tools only.
	writers, readers, lookers *gomcp.Server
	handler                   http.Handler
	subs                      *subscriptions

	stopping context.Context
	stop     context.CancelFunc
	watching sync.WaitGroup
}

// New builds the endpoint and starts watching approval changes.
func New(cfg Config) (*Service, error) {
	if cfg.Registry == nil || cfg.Approvals == nil || cfg.Hub == nil || cfg.Confirmations == nil {
		return nil, errors.New("mcp: registry, approvals, hub and confirmations are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	s := &Service{cfg: cfg, risks: map[string]capability.Risk{}}
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.subs = newSubscriptions(s.stopping)
	var err error
	if s.wait, err = confirm.NewController(confirm.Config{Registry: cfg.Confirmations, Mode: confirm.ModeWait, TTL: cfg.ConfirmTTL}); err != nil {
		return nil, err
	}
	if s.twoPhase, err = confirm.NewController(confirm.Config{Registry: cfg.Confirmations, Mode: confirm.ModeTwoPhase, TTL: cfg.ConfirmTTL}); err != nil {
		return nil, err
	}
	if cfg.Version == "" {
		s.cfg.Version = "dev"
	}
	if s.writers, err = s.newServer(func(capability.Risk) bool { return true }); err != nil {
		return nil, err
	}
	if s.readers, err = s.newServer(nil); err != nil {
		return nil, err
	}
	if s.lookers, err = s.newServer(func(r capability.Risk) bool { return r == capability.RiskRead }); err != nil {
		return nil, err
	}
	s.handler = strict(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
		gomcp.NewStreamableHTTPHandler(s.serverFor, &gomcp.StreamableHTTPOptions{
			SessionTimeout: cfg.SessionTimeout,
			Logger:         sdkLogger(cfg.Log),
			// DNS rebinding needs a browser to send our Bearer token,
			// which it cannot: /mcp takes no cookies, and a page's Origin
			// is checked in front of it (origins, on the route). A
			// reverse proxy on the same host forwards the public Host
			// header from a loopback address, which the check would
			// refuse.
			DisableLocalhostProtection: true,
		})))
	s.watching.Add(1)
	go s.watch()
	return s, nil
}

// handshakeVersions are the protocol versions served: those negotiated by
// initialize. The 2026-07-28 protocol is sessionless, and without a
// session there is no elicitation and no delivered subscription
// (ADR-0015).
var handshakeVersions = slices.DeleteFunc(gomcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })

// newServer builds a server offering the tools whose risk offer admits
// (nil: no tools).
func (s *Service) newServer(offer func(capability.Risk) bool) (*gomcp.Server, error) {
	caps := &gomcp.ServerCapabilities{Resources: &gomcp.ResourceCapabilities{}, Prompts: &gomcp.PromptCapabilities{}}
	if offer != nil {
		caps.Tools = &gomcp.ToolCapabilities{}
	}
	srv := gomcp.NewServer(&gomcp.Implementation{Name: "invoiced", Title: "invoiced back office", Version: s.cfg.Version}, &gomcp.ServerOptions{
		Instructions:              instructions,
		Logger:                    sdkLogger(s.cfg.Log),
		Capabilities:              caps,
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        s.unsubscribe,
		SetCacheable:              private,
		SupportedProtocolVersions: handshakeVersions,
	})
	srv.AddReceivingMiddleware(s.recoverer)
	srv.AddSendingMiddleware(s.queueUpdates)
	if offer != nil {
		if err := s.addTools(srv, offer); err != nil {
			return nil, err
		}
	}
	s.addResources(srv)
	addPrompts(srv)
	return srv, nil
}

const instructions = `invoiced runs an invoicing back office. Tools are its capabilities; every call acts for the user whose token opened this session.
- read tools run at once.
- bound tools (creating or changing drafts and customers, payments, mark paid) ask the user to confirm the exact input through an elicitation form; a client that cannot show one gets CONFIRMATION_REQUIRED and nothing is done. A large payment then also needs an approver, as below.
- consequential tools (issue-invoice, delete-invoice, issue-credit-note, void-invoice) need a back-office approver: the result is APPROVAL_REQUIRED with an approval_id and the resource invoiced://approvals/{id}. Subscribe to it (or read it again later); once it is approved, call the tool again with the same input.
Errors are tool results with isError and a JSON body {"error": {"code", "message", ...}}; a VALIDATION_FAILED lists the fields.`

// private marks every list and read result as specific to the caller:
// what a principal sees is theirs.
func private(_ context.Context, _ gomcp.Request, c *gomcp.Cacheable) { c.CacheScope = "private" }

// serverFor picks the server of a new session by the request's principal
// (set by identity.Authenticate on this HTTP request).
func (s *Service) serverFor(r *http.Request) *gomcp.Server {
	p, _ := identity.FromContext(r.Context())
	switch {
	case p.Role == identity.RoleApprover:
		return s.readers
	case p.ReadOnly:
		return s.lookers
	}
	return s.writers
}

// Handler is the /mcp endpoint. It must run behind identity.Authenticate.
func (s *Service) Handler() http.Handler { return s.handler }

// Shutdown cancels running calls and pending elicitations and closes
// every session, so open streams end at once instead of holding the
// server's shutdown; clients then see 404 and re-initialize elsewhere.
func (s *Service) Shutdown() {
	s.stop()
	for _, srv := range []*gomcp.Server{s.writers, s.readers, s.lookers} {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	}
}

// Close is Shutdown, then waits for the approval watcher to end.
func (s *Service) Close() {
	s.Shutdown()
	s.watching.Wait()
}
