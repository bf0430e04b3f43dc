package main

import (
	"context"
	"fmt"
	"io"

	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/store"
)

func cmdAudit(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprintln(stdout, "Usage: invoiced audit verify")
			return nil
		}
		fmt.Fprintln(stderr, "Usage: invoiced audit verify")
		return errUsage
	}
	fs := flagSet("audit verify", "Walk the audit chain from its first event and check every hash;\n"+
		"exits 1 naming the first row that does not follow from the chain.", stderr)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 1})
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := audit.Verify(ctx, pool)
	if err != nil {
		return fmt.Errorf("%w (%d events before it verified)", err, n)
	}
	fmt.Fprintf(stdout, "audit chain ok: %d events verified\n", n)
	return nil
}
