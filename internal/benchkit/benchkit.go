// Package benchkit holds what the benchmark commands share: a migrated
// database of their own, a seeded customer, and a process's CPU time.
// They are commands, not tests, so failures are returned, not reported
// to a testing.T.
package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5"
)

// CreateDB creates database name on the server of admin (a URL whose
// user may CREATE DATABASE), migrates it, and returns its URL.
func CreateDB(ctx context.Context, admin, name string) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	db, err := migrations.Open(u.String())
	if err != nil {
		return "", err
	}
	defer db.Close()
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		return "", err
	}
	if _, err := p.Up(ctx); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	return u.String(), nil
}

// DropDB drops database name, ending its sessions.
func DropDB(ctx context.Context, admin, name string) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// SeedCustomer inserts the customer the benchmarks read ("Bench GmbH").
func SeedCustomer(ctx context.Context, dbURL string, id uuid.UUID) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO customers (id, name, email, currency, created_at, updated_at) VALUES ($1, 'Bench GmbH', 'ap@bench.example', 'EUR', now(), now())`, id)
	if err != nil {
		return fmt.Errorf("seed customer: %w", err)
	}
	return nil
}

// CPUTime is the user+system CPU a process has used (Linux /proc; 0 where
// it cannot be read).
func CPUTime(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields count from after its ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}
