package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5/pgconn"
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
// name is the command and its synopsis ("users create --username NAME").
func flagSet(name, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nUsage: invoiced %s\n", description, name)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs. A mistake is a sentence saying what to do,
// then the command's usage (usageError); --help prints the usage alone.
func parse(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	// The flag package's own words ("flag provided but not defined")
	// are replaced by a sentence of ours.
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return flag.ErrHelp
	}
	return usageError(fs, "%s", flagMistake(err))
}

// flagMistake says what the flag package refused, and what to do.
func flagMistake(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return name + " is not a flag of this command; the flags are listed below"
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return name + " needs a value: " + name + " VALUE"
	}
	// `invalid value "x" for flag -limit: parse error`
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if value, flagName, ok := strings.Cut(rest, " for flag "); ok {
			flagName, _, _ = strings.Cut(flagName, ":")
			return fmt.Sprintf("%s is not a value %s takes; see what it takes below", value, flagName)
		}
	}
	return msg
}

// command is the command fs is for, without its synopsis: "users create"
// of "users create --username NAME --role ROLE".
func command(fs *flag.FlagSet) string {
	var words []string
	for _, w := range strings.Fields(fs.Name()) {
		if strings.IndexFunc(w, func(r rune) bool { return (r < 'a' || r > 'z') && r != '-' }) >= 0 || strings.HasPrefix(w, "-") {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// usageError prints what is wrong with the command line, as a sentence
// that says what to do, above fs's usage, and returns errUsage (exit
// status 2).
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "invoiced %s: %s\n\n", command(fs), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}

// subcommandError is usageError for a command made of subcommands
// (users, tokens, approvals, …): it names them, above their usage.
func subcommandError(stderr io.Writer, cmd string, args []string, usage string) error {
	var subs []string
	for _, l := range strings.Split(usage, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "Usage:"))
		rest, ok := strings.CutPrefix(l, "invoiced "+cmd+" ")
		if f := strings.Fields(rest); ok && len(f) > 0 {
			for _, s := range strings.Split(f[0], "|") {
				if !slices.Contains(subs, s) {
					subs = append(subs, s)
				}
			}
		}
	}
	what := "name one of " + wordList(subs, "or")
	if len(subs) == 1 {
		what = "the subcommand is " + subs[0]
	}
	if len(args) > 0 {
		what = fmt.Sprintf("there is no %q: %s", args[0], what)
	}
	fmt.Fprintf(stderr, "invoiced %s: %s\n\n%s\n", cmd, what, usage)
	return errUsage
}

// wordList is "a, b <conj> c".
func wordList(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintln(stderr, "invoiced:", errorSentence(err))
	return 1
}

// errorSentence says what went wrong and, where the CLI knows, what to do:
// a refused field names the field and the rule; a database without the
// schema or out of reach names the command or setting that fixes it.
func errorSentence(err error) string {
	var (
		pgErr   *pgconn.PgError
		connErr *pgconn.ConnectError
	)
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
		return "the database DATABASE_URL names has no invoiced schema: run `invoiced migrate up`, " +
			"or set DATABASE_URL to the database `make run` set up (unset, it is libpq's default)"
	case errors.As(err, &pgErr) && pgErr.Code == "3D000": // invalid_catalog_name
		return pgErr.Message + ": create it (`make run` does), or set DATABASE_URL to a database that exists"
	case errors.As(err, &pgErr) && pgErr.Code == "25006": // read_only_sql_transaction
		return "the database DATABASE_URL names takes no writes (a standby, or set read-only): set DATABASE_URL to the primary"
	case errors.As(err, &connErr):
		// store.Open's "connect to database (host=… user=…): …", whose
		// last part is the cause.
		msg := err.Error()
		where, _, _ := strings.Cut(strings.TrimPrefix(msg, "connect to database "), ": ")
		cause := msg
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			cause = msg[i+len(": "):]
		}
		return fmt.Sprintf("cannot connect to the database %s: %s; start PostgreSQL, or set DATABASE_URL to one that is running",
			where, cause)
	case store.IsUnavailable(err):
		return "the database went away during the command (" + err.Error() + "): run it again once PostgreSQL is back"
	}
	p, ok := problem.As(err)
	if !ok {
		return err.Error()
	}
	if p.Code == problem.CodeValidation && len(p.Errors) > 0 {
		// "the request has invalid fields" is the API's; the fields are
		// the flags' and arguments' values here.
		var parts []string
		for _, f := range p.Errors {
			parts = append(parts, f.Field+" "+f.Message)
		}
		return strings.Join(parts, "; ")
	}
	msg := p.Detail
	for _, f := range p.Errors {
		msg += fmt.Sprintf("; %s %s", f.Field, f.Message)
	}
	return msg
}

func newLogger(e env, w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(e.get("INVOICED_LOG_LEVEL", "info")))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
