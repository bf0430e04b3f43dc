package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheckTimeout is well under Docker's default healthcheck timeout
// (30 s) and a probe interval.
const healthcheckTimeout = 3 * time.Second

// cmdHealthcheck asks the server on this host whether it is ready (GET
// /readyz on INVOICED_ADDR's port): the image has no shell and no curl,
// so a container healthcheck runs the binary itself.
func cmdHealthcheck(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("healthcheck", "Exit 0 when the server listening on INVOICED_ADDR's port on this host is ready\n"+
		"(database reachable, schema current), 1 otherwise. For container healthchecks.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	addr := e.get("INVOICED_ADDR", ":8080")
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("INVOICED_ADDR must be host:port or :port, not %q", addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: /readyz answered %d", resp.StatusCode)
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}
