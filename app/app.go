// Package app wires the service together: pool → stores → services →
// handlers → routes. It is the one place where feature packages meet, so
// that cmd/invoiced stays a thin CLI and tests can build the whole service
// (see app/apptest) without a process.
package app

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is the service configuration that feature packages need beyond
// the pool; cmd/invoiced fills it from the environment.
type Config struct{}

// App holds the services and handlers of one running service.
type App struct {
	pool *pgxpool.Pool
	log  *slog.Logger
}

// New builds services and handlers over pool.
func New(_ context.Context, _ Config, pool *pgxpool.Pool, log *slog.Logger) (*App, error) {
	return &App{pool: pool, log: log}, nil
}

// Close stops background work New started.
func (a *App) Close() {}
