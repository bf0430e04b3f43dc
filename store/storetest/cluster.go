package storetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/migrations"
)

// Cluster is a PostgreSQL server of one test's own, run from the installed
// binaries (pg_config --bindir), for tests that stop and start the
// database under a running service: the shared test server is never
// stopped. It listens on a Unix socket in its own directory only, so
// parallel tests cannot collide on a port, and it is removed at cleanup.
// As root, the binaries run as the postgres user (initdb refuses root).
type Cluster struct {
	// URL is the cluster's postgres database, migrated.
	URL string

	dir, bin string
	runAs    string
	settings string // more server options, as -c name=value
}

// NewCluster initialises, starts and migrates a cluster, or fails the
// test saying what is missing: it never skips.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	return newCluster(t, "")
}

func newCluster(t testing.TB, settings string) *Cluster {
	t.Helper()
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		t.Fatalf("storetest: a throwaway PostgreSQL needs pg_config on PATH to find initdb and pg_ctl (Debian: postgresql and libpq-dev): %v", err)
	}
	c := &Cluster{bin: strings.TrimSpace(string(out)), settings: settings}
	c.dir, err = os.MkdirTemp("", "invoiced-pg-")
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(c.dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("storetest: running as root, a throwaway PostgreSQL runs as user postgres, which does not exist: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			t.Fatalf("storetest: %v", err)
		}
		c.runAs = "postgres"
	}
	c.run(t, "initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	c.Start(t)
	t.Cleanup(func() {
		// Immediate: the test is over, nothing needs a clean shutdown.
		_ = c.cmd("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop").Run()
	})
	c.URL = fmt.Sprintf("host=%s port=5432 user=postgres dbname=postgres sslmode=disable", c.dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := migrations.Open(c.URL)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer db.Close()
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("storetest: migrate the throwaway cluster: %v", err)
	}
	return c
}

// Stop shuts the server down as an operator would (pg_ctl -m fast):
// sessions are terminated, new connections refused.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.run(t, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
}

// Crash stops the server as a crash would (pg_ctl -m immediate): no
// session is told, a statement in flight loses its connection.
func (c *Cluster) Crash(t testing.TB) {
	t.Helper()
	c.run(t, "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
}

// Start starts the server (again), waiting until it accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	// No TCP listener; fsync off because nothing here must survive a crash.
	c.run(t, "pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "start",
		"-o", "-k "+c.dir+" -c listen_addresses='' -c fsync=off -c full_page_writes=off "+c.settings)
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.runAs != "" {
		return exec.Command("runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (c *Cluster) run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := c.cmd(name, args...).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		t.Fatalf("storetest: throwaway PostgreSQL: %s %s: %v\n%s\nserver log:\n%s", name, strings.Join(args, " "), err, out, log)
	}
}
