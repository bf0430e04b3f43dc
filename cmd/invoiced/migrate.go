package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/migrations"
	"github.com/pressly/goose/v3"
	"golang.org/x/term"
)

func cmdMigrate(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("migrate up|down|redo|status|version [--yes]",
		"Apply or inspect the embedded schema migrations of DATABASE_URL.\n"+
			"  up       apply every pending migration\n"+
			"  down     roll back the latest migration\n"+
			"  redo     roll back the latest migration and apply it again\n"+
			"  status   list migrations and whether each is applied\n"+
			"  version  print the current schema version\n"+
			"A rollback may drop tables and the rows in them: down and redo ask first on a\n"+
			"terminal, and need --yes otherwise.\n"+
			"A Postgres advisory lock makes concurrent runs wait for each other.", stderr)
	yes := fs.Bool("yes", false, "roll back without asking (down, redo)")
	if err := parse(fs, args); err != nil {
		return err
	}
	sub := fs.Arg(0)
	if fs.NArg() < 1 || !slices.Contains([]string{"up", "down", "redo", "status", "version"}, sub) {
		return usageError(fs, "name one of up, down, redo, status or version, for example: invoiced migrate up")
	}
	// Flags may follow the subcommand too: migrate down --yes.
	if err := parse(fs, fs.Args()[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is one word too many: migrate takes one subcommand", fs.Arg(0))
	}
	db, err := migrations.Open(e.get("DATABASE_URL", ""))
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		return err
	}
	if (sub == "down" || sub == "redo") && !*yes {
		if err := confirmRollback(ctx, p, sub, stdin, stderr); err != nil {
			return err
		}
	}
	switch sub {
	case "up":
		res, err := p.Up(ctx)
		for _, r := range res {
			fmt.Fprintf(stdout, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		v, err := p.GetDBVersion(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schema at version %d\n", v)
	case "down":
		r, err := p.Down(ctx)
		if err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		fmt.Fprintf(stdout, "rolled back %s\n", r.Source.Path)
	case "redo":
		down, up, err := migrations.Redo(ctx, db)
		if down != nil {
			fmt.Fprintf(stdout, "rolled back %s\n", down.Source.Path)
		}
		if err != nil {
			return fmt.Errorf("migrate redo: %w", err)
		}
		fmt.Fprintf(stdout, "applied %s\n", up.Source.Path)
	case "status":
		if err := migrateStatus(ctx, p, e.get("DATABASE_URL", ""), stdout); err != nil {
			return fmt.Errorf("migrate status: %w", err)
		}
	case "version":
		v, err := p.GetDBVersion(ctx)
		if err != nil {
			return fmt.Errorf("migrate version: %w", err)
		}
		fmt.Fprintln(stdout, v)
	}
	return nil
}

// migrateStatus lists the migrations and whether each is applied, then
// River's own view of its version (its tools read that).
func migrateStatus(ctx context.Context, p *goose.Provider, url string, stdout io.Writer) error {
	st, err := p.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range st {
		applied := "pending"
		if s.State == goose.StateApplied {
			applied = "applied " + s.AppliedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(stdout, "%-40s %s\n", s.Source.Path, applied)
	}
	applied, bundled, err := migrations.RiverVersions(ctx, url)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "river schema: version %d of %d (the river_* migrations above)\n", applied, bundled)
	return nil
}

// errNotConfirmed is a rollback the operator did not confirm: nothing was
// done (exit status 1).
var errNotConfirmed = errors.New("nothing was rolled back")

// confirmRollback asks on the terminal stdin is whether to roll back the
// latest applied migration, naming it; anything but "yes" declines. Off a
// terminal nobody can answer, so --yes is required instead.
func confirmRollback(ctx context.Context, p *goose.Provider, sub string, stdin io.Reader, stderr io.Writer) error {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return fmt.Errorf("migrate %s rolls back the latest migration, which may drop tables and the rows in them; "+
			"with no terminal to ask on, add --yes to do it: invoiced migrate %s --yes", sub, sub)
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", sub, err)
	}
	if v == 0 {
		return errors.New("no migration is applied: there is nothing to roll back")
	}
	name := fmt.Sprintf("version %d", v)
	for _, src := range p.ListSources() {
		if src.Version == v {
			name = filepath.Base(src.Path)
		}
	}
	fmt.Fprintf(stderr, "Roll back %s? Its down section may drop tables and the rows in them. Type yes to go on: ", name)
	answer, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the answer: %w", err)
	}
	if strings.TrimSpace(answer) != "yes" {
		return errNotConfirmed
	}
	return nil
}
