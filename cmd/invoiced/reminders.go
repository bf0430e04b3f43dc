package main

import (
	"context"
	"fmt"
	"io"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/reminders"
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
	pool, err := smallPool(ctx, e)
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
	var in remindersFile
	pool, u, err := adminChange(ctx, e, fs, args, stdin, "the settings as `invoiced reminders show` prints them", &in)
	if err != nil {
		return err
	}
	defer pool.Close()
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
