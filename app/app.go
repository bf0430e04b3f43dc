// Package app wires the service together: pool → stores → services →
// handlers → routes. It is the one place where feature packages meet, so
// that cmd/invoiced stays a thin CLI and tests can build the whole service
// (see app/apptest) without a process.
package app

import (
	"context"
	"log/slog"

	"github.com/invoiced/invoiced/web"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is the service configuration that feature packages need beyond
// the pool; cmd/invoiced fills it from the environment.
type Config struct {
	// Web configures the back-office inbox (sessions, sign-in limits);
	// the zero value means web.DefaultConfig().
	Web *web.Config
}

// App holds the services and handlers of one running service.
type App struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	web  *web.Handler
}

// New builds services and handlers over pool.
func New(_ context.Context, cfg Config, pool *pgxpool.Pool, log *slog.Logger) (*App, error) {
	a := &App{pool: pool, log: log}
	webCfg := web.DefaultConfig()
	if cfg.Web != nil {
		webCfg = *cfg.Web
	}
	wh, err := web.New(pool, webCfg, log, web.Deps{})
	if err != nil {
		return nil, err
	}
	a.web = wh
	return a, nil
}

// Close stops background work New started.
func (a *App) Close() {}
