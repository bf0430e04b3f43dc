package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/invoiced/invoiced/migrations"
	"github.com/pressly/goose/v3"
)

func cmdMigrate(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("migrate up|down|redo|status|version",
		"Apply or inspect the embedded schema migrations of DATABASE_URL.\n"+
			"  up       apply every pending migration\n"+
			"  down     roll back the latest migration\n"+
			"  redo     roll back the latest migration and apply it again\n"+
			"  status   list migrations and whether each is applied\n"+
			"  version  print the current schema version\n"+
			"A Postgres advisory lock makes concurrent runs wait for each other.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || !slices.Contains([]string{"up", "down", "redo", "status", "version"}, fs.Arg(0)) {
		return usageError(fs, "name one of up, down, redo, status or version, for example: invoiced migrate up")
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
	switch fs.Arg(0) {
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
