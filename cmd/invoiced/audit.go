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
		return subcommandError(stderr, "audit", args, "Usage: invoiced audit verify [--anchor SEQ:HASH]")
	}
	fs := flagSet("audit verify", "Walk the audit chain from its first event and check every hash;\n"+
		"exits 1 naming the first row that does not follow from the chain. It prints the\n"+
		"chain's head (SEQ:HASH): keep it outside the database, and a later run with\n"+
		"--anchor SEQ:HASH also proves that no event up to it was removed or rewritten.", stderr)
	anchorFlag := fs.String("anchor", "", "a head printed by an earlier audit verify (SEQ:HASH)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	var anchor *audit.Head
	if *anchorFlag != "" {
		h, err := audit.ParseHead(*anchorFlag)
		if err != nil {
			return fmt.Errorf("--anchor: %w", err)
		}
		anchor = &h
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 1})
	if err != nil {
		return err
	}
	defer pool.Close()
	head, err := audit.VerifyAnchored(ctx, pool, anchor)
	if err != nil {
		return fmt.Errorf("%w (%d events before it verified)", err, head.Seq)
	}
	fmt.Fprintf(stdout, "audit chain ok: %d events verified; head %s\n", head.Seq, head)
	return nil
}
