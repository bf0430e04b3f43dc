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

// CPUTime is the user+system CPU a process has used (/proc/PID/stat
// fields 14 and 15; 0 where it cannot be read).
func CPUTime(pid int) time.Duration { return statTicks(pid, 11, 12) }

// PostgresCPU sums the CPU of every process named postgres: the backends
// serving the benchmark, the WAL writer and the checkpointer, and the
// children the postmaster has reaped (fields 16 and 17): without those, a
// backend that ends between two readings takes its CPU out of the sum,
// which then shrinks. With a remote database it is zero.
func PostgresCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			total += statTicks(pid, 11, 12, 13, 14)
		}
	}
	return total
}

// statTicks sums /proc/PID/stat's fields at the given indexes (counted
// from the state, field 3) as CPU time, in clock ticks of 10 ms on Linux.
func statTicks(pid int, fields ...int) time.Duration {
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
	var ticks int64
	for _, k := range fields {
		if k >= len(f) {
			return 0
		}
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
