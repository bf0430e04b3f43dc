// Package app wires the service together: pool → stores → services →
// handlers → routes. It is the one place where feature packages meet, so
// that cmd/invoiced stays a thin CLI and tests can build the whole service
// (see app/apptest) without a process.
package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"

	"github.com/invoiced/invoiced/web"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is the service configuration that feature packages need beyond
// the pool; cmd/invoiced fills it from the environment.
type Config struct {
	// Web configures the back-office inbox (sessions, sign-in limits);
	// the zero value means web.DefaultConfig().
	Web *web.Config
	// Approvals is the approval policy (ADR-0010); zero fields take the
	// defaults of approvals.Policy. Tests set its clock.
	Approvals approvals.Policy
	// Invoices configures invoicing (number prefix, clock).
	Invoices invoices.Config
	// Model runs the step loop's model steps (INVOICED_MODEL_*); nil makes
	// POST /v1/chat answer 503 naming the settings to set.
	Model model.Provider
}

// App holds the services and handlers of one running service.
type App struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	web  *web.Handler

	approvalGate *approvals.Gate
	approvalSvc  *approvals.Service
	approvalHub  *approvals.Hub
	stopSweep    context.CancelFunc
	sweepDone    chan struct{}

	caps     *capability.Registry
	invoices *invoices.Service
	chat     *steploop.Service
}

// New builds services and handlers over pool.
func New(ctx context.Context, cfg Config, pool *pgxpool.Pool, log *slog.Logger) (*App, error) {
	a := &App{pool: pool, log: log}
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
	if err := a.startChat(cfg.Model); err != nil {
		a.Close()
		return nil, err
	}
	webCfg := web.DefaultConfig()
	if cfg.Web != nil {
		webCfg = *cfg.Web
	}
	wh, err := web.New(pool, webCfg, log, web.Deps{Approvals: a.approvalSvc, NumberPrefix: cfg.Invoices.NumberPrefix})
	if err != nil {
		a.Close()
		return nil, err
	}
	a.web = wh
	return a, nil
}

// startChat builds the step loop over the capability registry, with the
// frontend tools and the confirm controller for bound capabilities
// (ADR-0005: wait mode, stated in confirm.AgentToolset).
func (a *App) startChat(m model.Provider) error {
	ctl, err := confirm.NewController(confirm.Config{
		Registry: confirm.NewPostgres(a.pool),
		Mode:     confirm.AgentToolset.Confirmations,
	})
	if err != nil {
		return err
	}
	a.chat, err = steploop.New(steploop.Config{
		DB: a.pool, Model: m, Tools: a.caps, Confirm: ctl, Log: a.log,
		Frontend: []steploop.FrontendTool{steploop.ShowInvoice},
	})
	return err
}

// approvalSweepInterval is how often expired approval requests are marked
// and announced; reads and the gate expire what they touch at once, so
// this only bounds how late a waiting client learns of an expiry.
const approvalSweepInterval = 30 * time.Second

// startApprovals builds the approval gate and service and starts the one
// LISTEN connection of this process and the expiry sweep.
func (a *App) startApprovals(ctx context.Context, policy approvals.Policy) error {
	a.approvalHub = approvals.NewHub(a.pool.Config().ConnConfig, a.log)
	if err := a.approvalHub.Start(ctx); err != nil {
		return err
	}
	a.approvalGate = approvals.NewGate(policy)
	a.approvalSvc = approvals.NewService(a.pool, policy, a.approvalHub)
	sweepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopSweep, a.sweepDone = stop, make(chan struct{})
	go func() {
		defer close(a.sweepDone)
		t := time.NewTicker(approvalSweepInterval)
		defer t.Stop()
		for {
			select {
			case <-sweepCtx.Done():
				return
			case <-t.C:
				if _, err := a.approvalSvc.ExpireDue(sweepCtx); err != nil && sweepCtx.Err() == nil {
					a.log.Warn("approval expiry sweep", "err", err)
				}
			}
		}
	}()
	return nil
}

// ApprovalGate is the transactional gate consequential capabilities run
// through (ADR-0010).
func (a *App) ApprovalGate() *approvals.Gate { return a.approvalGate }

// Capabilities is the registry every path runs capabilities through.
func (a *App) Capabilities() *capability.Registry { return a.caps }

// Approvals is the approval service (decisions, waits) the CLI and tests use.
func (a *App) Approvals() *approvals.Service { return a.approvalSvc }

// Close stops background work New started.
func (a *App) Close() {
	if a.stopSweep != nil {
		a.stopSweep()
		<-a.sweepDone
		a.stopSweep = nil
	}
	if a.approvalHub != nil {
		a.approvalHub.Close()
	}
}
