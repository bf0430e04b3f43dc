package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/invoiced/invoiced/problem"
)

// env is the process environment, read once so tests can supply their own.
type env map[string]string

func envFromOS() env {
	e := env{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		e[k] = v
	}
	return e
}

func (e env) get(key, def string) string {
	if v, ok := e[key]; ok && v != "" {
		return v
	}
	return def
}

// errUsage marks a command-line mistake (exit status 2).
var errUsage = errors.New("usage")

// flagSet returns a FlagSet whose --help prints the description first.
func flagSet(name, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nUsage: invoiced %s\n", description, name)
		fs.PrintDefaults()
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return errUsage
	}
	return nil
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	if p, ok := problem.As(err); ok {
		msg := p.Detail
		for _, f := range p.Errors {
			msg += fmt.Sprintf("; %s %s", f.Field, f.Message)
		}
		fmt.Fprintln(stderr, "invoiced:", msg)
		return 1
	}
	fmt.Fprintln(stderr, "invoiced:", err)
	return 1
}

func newLogger(e env, w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(e.get("INVOICED_LOG_LEVEL", "info")))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
