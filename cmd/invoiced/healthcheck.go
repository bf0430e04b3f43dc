package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	site, err := localURL(e.get("INVOICED_ADDR", ":8080"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, site+"/readyz", nil)
	if err != nil {
		return err
	}
	url := req.URL.String()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: nothing answers %s (%s): is invoiced serve running there, on INVOICED_ADDR's port?", url, cause(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: %s answered %d: %s", url, resp.StatusCode, readyzReason(resp))
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}

// readyzReason is why /readyz refused, as its problem's detail says
// ("not ready: the database is read-only"), without the "not ready"
// this command says itself; the status text when the body has none.
func readyzReason(resp *http.Response) string {
	var p struct {
		Detail string `json:"detail"`
	}
	// A problem is well under 4 KiB; what else answers is cut there.
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&p); err != nil || p.Detail == "" {
		return http.StatusText(resp.StatusCode)
	}
	return strings.TrimPrefix(p.Detail, "not ready: ")
}

// cause is the last part of a chain of wrapped errors' message: "connection
// refused" of "Get …: dial tcp …: connect: connection refused".
func cause(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+len(": "):]
	}
	return msg
}
