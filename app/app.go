// Package app wires the service together: pool → stores → services →
// handlers → routes. It is the one place where feature packages meet, so
// that cmd/invoiced stays a thin CLI and tests can build the whole service
// (see app/apptest) without a process.
package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/invoiced/invoiced/accounts"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/idempotency"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/mcp"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/web"
	"github.com/jackc/pgx/v5/pgxpool"
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
	// Seller issues the documents (INVOICED_SELLER_*); without a name the
	// PDF routes answer 503 naming the settings.
	Seller document.Party
	// Model runs the step loop's model steps (INVOICED_MODEL_*); nil makes
	// POST /v1/chat answer 503 naming the settings to set.
	Model model.Provider
	// EventsHeartbeat is how often an open approvals event stream sends a
	// keep-alive and re-checks its credential; 0 means
	// approvals.DefaultHeartbeat (15 s). Tests shorten it.
	EventsHeartbeat time.Duration
	// MCP tunes the /mcp endpoint; a zero Heartbeat takes EventsHeartbeat.
	MCP mcp.Options
	// Chat bounds chat runs and conversations (INVOICED_CHAT_*); zero
	// fields take steploop's defaults.
	Chat steploop.Limits
}

// App holds the services and handlers of one running service.
type App struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	web  *web.Handler

	eventsHeartbeat time.Duration

	approvalGate *approvals.Gate
	approvalSvc  *approvals.Service
	approvalHub  *approvals.Hub
	accounts     *accounts.Service
	stopSweeps   context.CancelFunc
	sweeps       sync.WaitGroup

	caps     *capability.Registry
	invoices *invoices.Service
	seller   document.Party
	chat     *steploop.Service
	mcp      *mcp.Service
}

// New builds services and handlers over pool.
func New(ctx context.Context, cfg Config, pool *pgxpool.Pool, log *slog.Logger) (*App, error) {
	a := &App{pool: pool, log: log, eventsHeartbeat: cfg.EventsHeartbeat, seller: cfg.Seller}
	cfg.Approvals.Capabilities = ConsequentialCapabilities()
	if err := a.startApprovals(ctx, cfg.Approvals); err != nil {
		return nil, err
	}
	// issue-invoice and delete-invoice take effect only by consuming a
	// durable approval in their own transaction (ADR-0010).
	a.invoices = invoices.NewService(pool, a.approvalGate, cfg.Invoices)
	a.caps = capability.NewRegistry()
	for _, c := range invoices.Capabilities(a.invoices) {
		if err := a.caps.Register(c); err != nil {
			a.Close()
			return nil, err
		}
	}
	ctl, err := a.startChat(ctx, cfg.Model, cfg.Chat)
	if err != nil {
		a.Close()
		return nil, err
	}
	webCfg := web.DefaultConfig()
	if cfg.Web != nil {
		webCfg = *cfg.Web
	}
	webCfg.SecureCookies = webCfg.SecureCookies || cfg.SecureCookies
	wh, err := web.New(pool, webCfg, log, web.Deps{Approvals: a.approvalSvc, NumberPrefix: cfg.Invoices.NumberPrefix, Seller: cfg.Seller})
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
		Hub: a.approvalHub, Confirmations: confirm.NewPostgres(pool), Log: log})
	if err != nil {
		a.Close()
		return nil, err
	}
	a.startSweeps(ctx, ctl, webCfg.SessionIdle)
	return a, nil
}

// ConsequentialCapabilities names the capabilities that take effect only
// against a durable approval (ADR-0010), the ones approval rules may name,
// read from the capabilities' descriptors (no handler runs).
func ConsequentialCapabilities() []string {
	var names []string
	for _, c := range invoices.Capabilities(nil) {
		if c.Risk == capability.RiskConsequential {
			names = append(names, c.Name)
		}
	}
	return names
}

// startChat builds the step loop over the capability registry, with the
// frontend tools and the confirm controller for bound capabilities
// (ADR-0005: wait mode, stated in confirm.AgentToolset), and starts its
// listener for the run log.
func (a *App) startChat(ctx context.Context, m model.Provider, limits steploop.Limits) (*confirm.Controller, error) {
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
		Limits:   limits, Listen: a.pool.Config().ConnConfig,
	})
	if err != nil {
		return nil, err
	}
	return ctl, a.chat.Start(ctx)
}

// Sweep intervals. Each sweep only deletes or expires what is already
// dead, so the interval bounds how long such rows linger, not correctness:
// reads and gates check expiry themselves.
const (
	// approvalSweepInterval bounds how late a waiting client learns that a
	// request expired: 30 s.
	approvalSweepInterval = 30 * time.Second
	// chatRunSweepInterval bounds how long a finished chat run's log
	// outlives its replay window, and how late a run whose replica died is
	// stored when nobody asks for it: 30 s.
	chatRunSweepInterval = 30 * time.Second
	// housekeepingInterval is for rows nobody waits on (used
	// confirmations, idempotency keys past 24 h, dead sessions): 5 min.
	housekeepingInterval = 5 * time.Minute
)

// startApprovals builds the approval gate and service and starts the one
// LISTEN connection of this process.
func (a *App) startApprovals(ctx context.Context, policy approvals.Policy) error {
	a.approvalHub = approvals.NewHub(a.pool.Config().ConnConfig, a.log)
	if err := a.approvalHub.Start(ctx); err != nil {
		return err
	}
	a.approvalGate = approvals.NewGate(policy)
	a.approvalSvc = approvals.NewService(a.pool, policy, a.approvalHub)
	// Taking a user's authority away voids their decisions on open
	// requests, in the same transaction (ADR-0012).
	a.accounts = accounts.NewService(a.pool, a.approvalSvc)
	return nil
}

// startSweeps runs the periodic clean-ups until Close.
func (a *App) startSweeps(ctx context.Context, ctl *confirm.Controller, sessionIdle time.Duration) {
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopSweeps = stop
	a.every(bg, "approval expiry", approvalSweepInterval, func(ctx context.Context) error {
		_, err := a.approvalSvc.ExpireDue(ctx)
		return err
	})
	a.every(bg, "confirmations", housekeepingInterval, func(ctx context.Context) error {
		_, err := ctl.Sweep(ctx)
		return err
	})
	a.every(bg, "chat runs", chatRunSweepInterval, a.chat.SweepRuns)
	a.every(bg, "idempotency keys", housekeepingInterval, func(ctx context.Context) error {
		_, err := idempotency.KeySweep(ctx, a.pool)
		return err
	})
	a.every(bg, "web sessions", housekeepingInterval, func(ctx context.Context) error {
		_, err := web.SessionSweep(ctx, a.pool, sessionIdle)
		return err
	})
}

// every runs fn every interval until ctx ends, logging failures.
func (a *App) every(ctx context.Context, name string, interval time.Duration, fn func(context.Context) error) {
	a.sweeps.Add(1)
	go func() {
		defer a.sweeps.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := fn(ctx); err != nil && ctx.Err() == nil {
					a.log.Warn("sweep failed", "sweep", name, "err", err)
				}
			}
		}
	}()
}

// ApprovalGate is the transactional gate consequential capabilities run
// through (ADR-0010).
func (a *App) ApprovalGate() *approvals.Gate { return a.approvalGate }

// Capabilities is the registry every path runs capabilities through.
func (a *App) Capabilities() *capability.Registry { return a.caps }

// Approvals is the approval service (decisions, waits) the CLI and tests use.
func (a *App) Approvals() *approvals.Service { return a.approvalSvc }

// Accounts administers users and tokens (the CLI and tests use it).
func (a *App) Accounts() *accounts.Service { return a.accounts }

// Close stops background work New started.
func (a *App) Close() {
	if a.stopSweeps != nil {
		a.stopSweeps()
		a.sweeps.Wait()
		a.stopSweeps = nil
	}
	if a.mcp != nil {
		a.mcp.Close()
	}
	if a.approvalHub != nil {
		a.approvalHub.Close()
	}
	if a.chat != nil {
		a.chat.Close()
	}
}
