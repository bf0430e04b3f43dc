package main

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/reminders"
	"github.com/invoiced/invoiced/server"
)

const remindersUsage = `Usage:
  invoiced reminders show
  invoiced reminders set --as ADMIN [--file PATH]`

func cmdReminders(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "reminders", args, remindersUsage)
	}
	switch args[0] {
	case "show":
		return cmdRemindersShow(ctx, e, args[1:], stdout, stderr)
	case "set":
		return cmdRemindersSet(ctx, e, args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, remindersUsage)
		return nil
	}
	return subcommandError(stderr, "reminders", args, remindersUsage)
}

func cmdRemindersShow(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("reminders show",
		"Print the reminder settings as JSON, as GET /v1/reminders/settings answers them: whether\n"+
			"automatic reminders are on, stop_after_level, and the levels with their wording per\n"+
			"language (docs/reminders.md). Edit it and give it to `invoiced reminders set`.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is one word too many: reminders show takes none", fs.Arg(0))
	}
	pool, err := sellerPool(ctx, e)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := reminders.SettingsGet(ctx, pool)
	if err != nil {
		return err
	}
	return printJSON(stdout, s)
}

// remindersFile is what `reminders set` reads: `reminders show`'s JSON.
// Its version is the one the change is based on; the levels' numbers are
// their places, and updated_at and updated_by are the server's to set.
type remindersFile struct {
	Automatic      bool `json:"automatic"`
	StopAfterLevel *int `json:"stop_after_level"`
	Levels         []struct {
		Level int `json:"level"`
		reminders.LevelInput
	} `json:"levels"`
	Version   *int64 `json:"version"`
	UpdatedAt any    `json:"updated_at"`
	UpdatedBy any    `json:"updated_by"`
}

func cmdRemindersSet(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("reminders set --as ADMIN [--file PATH]",
		"Set the reminder settings, all of them at once, from JSON as `invoiced reminders show`\n"+
			"prints it (--file, or standard input): \"automatic\": true turns automatic reminders on.\n"+
			"Its \"version\" is the version the change is based on: a change made meanwhile is\n"+
			"refused rather than overwritten. Every bad field is named and nothing is written.\n"+
			"\n"+
			"  invoiced reminders show > reminders.json   # edit reminders.json, then\n"+
			"  invoiced reminders set --as admin --file reminders.json", stderr)
	as := fs.String("as", "", "username of the admin making the change (required; audited)")
	file := fs.String("file", "-", "the JSON file to read; - is standard input")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *as == "" {
		return usageError(fs, "--as is required: the username of the admin making the change, as in --as admin")
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is not a flag; give the JSON with --file PATH or on standard input", fs.Arg(0))
	}
	raw, err := readSellerFile(*file, stdin)
	if err != nil {
		return err
	}
	var in remindersFile
	if err := server.DecodeJSONReader(bytes.NewReader(raw), &in); err != nil {
		if p, ok := problem.As(err); ok && p.Code == problem.CodeMalformedJSON {
			return fmt.Errorf("%s is not JSON (%s): give the settings as `invoiced reminders show` prints them", sourceName(*file), p.Detail)
		}
		return err
	}
	pool, err := sellerPool(ctx, e)
	if err != nil {
		return err
	}
	defer pool.Close()
	u, err := identity.UserGetByUsername(ctx, pool, *as)
	if err != nil {
		return err
	}
	input := reminders.Input{Automatic: in.Automatic, StopAfterLevel: in.StopAfterLevel}
	for _, l := range in.Levels {
		input.Levels = append(input.Levels, l.LevelInput)
	}
	var match *etag.IfMatch
	if in.Version != nil {
		m := etag.MatchVersion(*in.Version)
		match = &m
	}
	s, err := reminders.New(pool, nil, reminders.Config{}).SetSettings(ctx, u.Principal(), capability.PathCLI, input, match)
	if p, ok := problem.As(err); ok && p.Code == etag.CodeVersionMismatch {
		return fmt.Errorf("the reminder settings changed since version %d: run `invoiced reminders show` again and make the change there", *in.Version)
	}
	if err != nil {
		return err
	}
	return printJSON(stdout, s)
}
