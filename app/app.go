// Package app wires the service together: pool → stores → services →
// handlers → routes. It is the one place where feature packages meet, so
// that cmd/invoiced stays a thin CLI and tests can build the whole service
// (see app/apptest) without a process.
package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/accounts"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/mcp"
	"github.com/invoiced/invoiced/notify"
	"github.com/invoiced/invoiced/oauth"
	"github.com/invoiced/invoiced/origins"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/reminders"
	"github.com/invoiced/invoiced/schedules"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/sending"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/web"
	"github.com/invoiced/invoiced/webhooks"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the service configuration that feature packages need beyond
// the pool; cmd/invoiced fills it from the environment.
type Config struct {
	// Web configures the back-office inbox (sessions, sign-in limits);
	// nil means web.DefaultConfig().
	Web *web.Config
	// SecureCookies forces the inbox's cookies Secure, as
	// INVOICED_SECURE_COOKIES=true asks behind a TLS proxy that does not
	// send X-Forwarded-Proto; otherwise they are Secure when the request
	// came over TLS or says so.
	SecureCookies bool
	// Approvals is the approvals' configuration (ADR-0010: TTLs, clock);
	// zero fields take the defaults of approvals.Policy, and New fills
	// Capabilities from the registry. How many approvers a request needs
	// is data (ADR-0014). Tests set its clock.
	Approvals approvals.Policy
	// Invoices configures invoicing (number prefix, clock).
	Invoices invoices.Config
	// Model runs the step loop's model steps (INVOICED_MODEL_*); nil makes
	// POST /v1/chat answer 503 naming the settings to set.
	Model model.Provider
	// EventsHeartbeat is how often an open approvals event stream sends a
	// keep-alive and re-checks its credential; 0 means
	// approvals.DefaultHeartbeat (15 s). Tests shorten it.
	EventsHeartbeat time.Duration
	// Notify configures the notification mails (INVOICED_SMTP_URL,
	// INVOICED_MAIL_FROM, INVOICED_PUBLIC_URL, INVOICED_APPROVAL_REMINDERS);
	// a nil Sender sends none.
	Notify notify.Config
	// Webhooks configures webhook deliveries (INVOICED_WEBHOOK_RETRY_SCHEDULE,
	// INVOICED_WEBHOOKS_ALLOW_PRIVATE).
	Webhooks webhooks.Config
	// MCP tunes the /mcp endpoint; a zero Heartbeat takes EventsHeartbeat.
	MCP mcp.Options
	// OAuth configures the authorization server of /mcp (ADR-0023).
	OAuth oauth.Config
	// AllowedOrigins are the origins, besides the service's own, whose
	// pages may call /mcp (INVOICED_MCP_ALLOWED_ORIGINS): browser-based MCP
	// clients. Any other Origin is refused with 403.
	AllowedOrigins origins.Allowed
	// Version is the binary's (main.version), which /mcp reports.
	Version string
	// Chat bounds chat runs and conversations (INVOICED_CHAT_*); zero
	// fields take steploop's defaults.
	Chat steploop.Limits
	// Clock is background work's clock: when scheduled jobs (reminders,
	// escalations) fall due, and what reminders read; nil is the wall
	// clock. Tests set it, with Approvals.Now, to one running
	// clocktest.Running clock and move both by advancing it.
	Clock func() time.Time
	// ReminderInterval is how often the automatic reminders look for
	// what fell due; 0 means an hour. Tests shorten it.
	ReminderInterval time.Duration
}

// App holds the services and handlers of one running service.
type App struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	web  *web.Handler

	eventsHeartbeat time.Duration
	allowedOrigins  origins.Allowed

	approvalGate *approvals.Gate
	approvalSvc  *approvals.Service
	approvalHub  *approvals.Hub
	allowances   *allowances.Service
	accounts     *accounts.Service
	// listener is the process's one LISTEN connection: approval
	// decisions and chat runs.
	listener *store.Listener

	events     *outbox.Emitter
	riverPool  *pgxpool.Pool
	background *outbox.Runner
	notify     *notify.Service
	webhooks   *webhooks.Service

	caps      *capability.Registry
	invoices  *invoices.Service
	schedules *schedules.Service
	sellers   *seller.Service
	sending   *sending.Service
	// reminders: the customer reminders (dunning) and their periodic job.
	reminders *reminders.Service
	chat      *steploop.Service
	mcp       *mcp.Service
	oauth     *oauth.Service
}

// New builds services and handlers over pool.
func New(ctx context.Context, cfg Config, pool *pgxpool.Pool, log *slog.Logger) (*App, error) {
	a := &App{pool: pool, log: log, eventsHeartbeat: cfg.EventsHeartbeat, allowedOrigins: cfg.AllowedOrigins,
		listener: store.NewListener(pool.Config().ConnConfig, log)}
	cfg.Approvals.Capabilities, cfg.Approvals.Governed = ConsequentialCapabilities(), GovernedCapabilities()
	cfg.Approvals.JudgedAlsoBy = allowances.JudgedAlsoBy
	var err error
	if a.events, err = NewEmitter(log); err != nil {
		return nil, err
	}
	a.startApprovals(cfg.Approvals)
	// issue-invoice and delete-invoice take effect only by consuming a
	// durable approval in their own transaction (ADR-0010). Issuing
	// freezes the seller into the invoice or credit note.
	a.invoices = invoices.NewService(pool, a.approvalGate, a.events, cfg.Invoices)
	a.sellers = seller.NewService(pool, nil)
	a.caps = capability.NewRegistry()
	a.schedules = schedules.NewService(pool, a.events, schedules.Config{BusinessTimeZone: cfg.Invoices.BusinessTimeZone, Now: cfg.Invoices.Now,
		Issue: Issuer(pool, a.caps)})
	a.sending = sending.New(pool, a.events, a.events, sending.Config{Sender: cfg.Notify.Sender, Now: cfg.Invoices.Now})
	a.reminders = reminders.New(pool, a.sending, reminders.Config{Today: a.invoices.BusinessToday, Now: cfg.Invoices.Now, Log: log})
	for _, c := range slices.Concat(invoices.Capabilities(a.invoices), sending.Capabilities(a.sending),
		allowances.Capabilities(a.allowances), reminders.Capabilities(a.reminders), schedules.Capabilities(a.schedules)) {
		if err := a.caps.Register(c); err != nil {
			a.Close()
			return nil, err
		}
	}
	ctl, err := a.startChat(cfg.Model, cfg.Chat)
	if err != nil {
		a.Close()
		return nil, err
	}
	// After approvals and chat registered their channels.
	if err := a.listener.Start(ctx); err != nil {
		a.Close()
		return nil, err
	}
	webCfg := web.DefaultConfig()
	if cfg.Web != nil {
		webCfg = *cfg.Web
	}
	webCfg.SecureCookies = webCfg.SecureCookies || cfg.SecureCookies
	a.oauth = oauth.NewService(pool, cfg.OAuth)
	wh, err := web.New(pool, webCfg, log, web.Deps{Approvals: a.approvalSvc, Allowances: a.allowances, NumberPrefix: cfg.Invoices.NumberPrefix, OAuth: a.oauth})
	if err != nil {
		a.Close()
		return nil, err
	}
	a.web = wh
	mcpOpts := cfg.MCP
	if mcpOpts.Heartbeat == 0 {
		mcpOpts.Heartbeat = cfg.EventsHeartbeat
	}
	a.mcp, err = mcp.New(mcp.Config{Options: mcpOpts, Registry: a.caps, Approvals: a.approvalSvc,
		Hub: a.approvalHub, Confirmations: confirm.NewPostgres(pool), Log: log, Version: cfg.Version})
	if err != nil {
		a.Close()
		return nil, err
	}
	if err := a.startBackground(ctx, cfg, ctl, webCfg.SessionIdle); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// ConsequentialCapabilities names the capabilities that take effect only
// against a durable approval (ADR-0010), the ones approval rules may name,
// read from the capabilities' descriptors (no handler runs).
func ConsequentialCapabilities() []string {
	var names []string
	for _, c := range append(invoices.Capabilities(nil), allowances.Capabilities(nil)...) {
		if c.Risk == capability.RiskConsequential {
			names = append(names, c.Name)
		}
	}
	return names
}

// GovernedCapabilities names the bound capabilities whose handlers pass
// every call through the approval gate (ADR-0022 §1): approval rules may
// name them, and below every tier they need no approver.
func GovernedCapabilities() []string {
	var names []string
	for _, c := range invoices.Capabilities(nil) {
		if c.Risk == capability.RiskBound && c.Governed {
			names = append(names, c.Name)
		}
	}
	return names
}

// startChat builds the step loop over the capability registry, with the
// frontend tools and the confirm controller for bound capabilities
// (ADR-0005: wait mode, stated in confirm.AgentToolset); its run log's
// channel joins the process's listener.
func (a *App) startChat(m model.Provider, limits steploop.Limits) (*confirm.Controller, error) {
	ctl, err := confirm.NewController(confirm.Config{
		Registry: confirm.NewPostgres(a.pool),
		Mode:     confirm.AgentToolset.Confirmations,
	})
	if err != nil {
		return nil, err
	}
	a.chat, err = steploop.New(steploop.Config{
		DB: a.pool, Model: m, Tools: a.caps, Confirm: ctl, Log: a.log,
		Frontend: []steploop.FrontendTool{steploop.ShowInvoice},
		Limits:   limits, Listener: a.listener,
	})
	if err != nil {
		return nil, err
	}
	return ctl, nil
}

// startApprovals builds the approval gate and service; the hub of
// decisions joins the process's listener.
func (a *App) startApprovals(policy approvals.Policy) {
	a.approvalHub = approvals.NewHub(a.log)
	a.listener.Handle(approvals.Channel, a.approvalHub)
	a.approvalGate = approvals.NewGate(policy, a.events)
	a.approvalSvc = approvals.NewService(a.pool, policy, a.approvalHub, a.events)
	// Calls that would ask for an approval draw a standing allowance
	// covering them instead, in the gate's transaction.
	a.allowances = allowances.NewService(a.pool, a.approvalGate, policy.Now)
	a.approvalGate.UseAllowances(a.allowances)
	// Taking a user's authority away voids their decisions on open
	// requests, in the same transaction (ADR-0012).
	a.accounts = accounts.NewService(a.pool, a.approvalSvc)
}

// Reminders is the customer reminders' service (tests run its job).
func (a *App) Reminders() *reminders.Service { return a.reminders }

// ApprovalGate is the transactional gate consequential capabilities run
// through (ADR-0010).
func (a *App) ApprovalGate() *approvals.Gate { return a.approvalGate }

// Capabilities is the registry every path runs capabilities through.
func (a *App) Capabilities() *capability.Registry { return a.caps }

// Schedules is the recurring invoices' service the CLI and tests use.
func (a *App) Schedules() *schedules.Service { return a.schedules }

// Issuer is the billing run's issuer over caps (schedules.Config.Issue):
// issue-invoice as a call of the schedule's creator by the system path,
// prepared and invoked as any path's call, so the same validation, gate
// and effect apply (ADR-0027 §3). serve and `invoiced schedules run` use it.
func Issuer(db store.Executor, caps *capability.Registry) schedules.Issuer {
	return func(ctx context.Context, user, invoiceID uuid.UUID) (*invoices.Invoice, error) {
		u, err := identity.UserGetByID(ctx, db, user)
		if err != nil {
			return nil, err
		}
		call, err := caps.Prepare(invoices.CapIssue, json.RawMessage(`{"invoice_id":"`+invoiceID.String()+`"}`))
		if err != nil {
			return nil, err
		}
		call.Principal, call.Via = u.Principal(), capability.PathSystem
		out, err := caps.Invoke(ctx, call)
		if err != nil {
			return nil, err
		}
		return out.(*invoices.Invoice), nil
	}
}

// Allowances is the standing allowances' service the CLI and tests use.
func (a *App) Allowances() *allowances.Service { return a.allowances }

// Approvals is the approval service (decisions, waits) the CLI and tests use.
func (a *App) Approvals() *approvals.Service { return a.approvalSvc }

// MCP is the /mcp endpoint (tests read its subscription counts).
func (a *App) MCP() *mcp.Service { return a.mcp }

// Collectors are the metrics of the app's own, for serve's registry.
func (a *App) Collectors() []prometheus.Collector {
	return []prometheus.Collector{a.notify.Skipped()}
}

// NotifySkipped counts notification recipients skipped for want of an
// email address.
func (a *App) NotifySkipped() prometheus.Counter { return a.notify.Skipped() }

// Events is the emitter every fact is recorded through.
func (a *App) Events() *outbox.Emitter { return a.events }

// stopWait bounds Close's wait for running jobs: River's soft stop (10 s)
// plus time for the cancelled ones to be put back.
const stopWait = 15 * time.Second

// Close stops background work New started.
func (a *App) Close() {
	if a.background != nil {
		ctx, cancel := context.WithTimeout(context.Background(), stopWait)
		if err := a.background.Stop(ctx); err != nil {
			a.log.Warn("stopping background jobs", "err", err)
		}
		cancel()
		a.background = nil
	}
	if a.riverPool != nil {
		a.riverPool.Close()
		a.riverPool = nil
	}
	if a.mcp != nil {
		a.mcp.Close()
	}
	if a.approvalHub != nil {
		a.approvalHub.Close()
	}
	if a.listener != nil {
		a.listener.Close()
	}
}
