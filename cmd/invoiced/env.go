package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
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
// schema, out of reach, or refusing who connects names the server, the
// cause and the command or setting that fixes it.
func errorSentence(err error) string {
	var (
		pgErr    *pgconn.PgError
		connErr  *pgconn.ConnectError
		parseErr *pgconn.ParseConfigError
	)
	switch {
	case errors.As(err, &parseErr):
		return parseSentence(parseErr)
	case errors.As(err, &connErr):
		return connectSentence(connErr)
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
		return "the database DATABASE_URL names has no invoiced schema: run `invoiced migrate up`, " +
			"or set DATABASE_URL to the database `make run` set up (unset, it is libpq's default)"
	case errors.As(err, &pgErr) && pgErr.Code == "25006": // read_only_sql_transaction
		return "the database DATABASE_URL names takes no writes (a standby, or set read-only): set DATABASE_URL to the primary"
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

// databaseURLForms is what DATABASE_URL may hold, for a sentence that
// refuses it.
const databaseURLForms = "a URL such as postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=disable, " +
	"or keyword=value pairs such as host=HOST port=5432 dbname=DATABASE user=USER"

// parseSentence says why DATABASE_URL could not be read and what form it
// takes. pgconn's own message quotes the string; the quote is left out, as
// its redaction of a password is best effort.
func parseSentence(err *pgconn.ParseConfigError) string {
	why := err.Error()
	if _, after, ok := strings.Cut(why, "`: "); ok {
		why = after
	}
	return fmt.Sprintf("DATABASE_URL cannot be read (%s): write it as %s", why, databaseURLForms)
}

// connectSentence says, in one sentence, which server a connection went
// to (host and port), why it failed, and what to do: a server out of
// reach, a role or database it does not have, a password or a rule of
// pg_hba.conf that refused the user.
func connectSentence(err *pgconn.ConnectError) string {
	c := err.Config
	where := net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
	if strings.HasPrefix(c.Host, "/") {
		where = fmt.Sprintf("%s/.s.PGSQL.%d", c.Host, c.Port) // a Unix socket
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "3D000": // invalid_catalog_name
			return fmt.Sprintf("PostgreSQL at %s has no database %q: create it (`make run` does), or set DATABASE_URL to a database that exists",
				where, c.Database)
		case pgErr.Code == "28000" && strings.HasPrefix(pgErr.Message, "role "): // role "x" does not exist
			return fmt.Sprintf("PostgreSQL at %s has no role %q: create it (createuser %s), or set DATABASE_URL's user to a role that exists",
				where, c.User, c.User)
		case pgErr.Code == "28P01": // invalid_password
			return fmt.Sprintf("PostgreSQL at %s refused the password of %q: set the right one in DATABASE_URL", where, c.User)
		case pgErr.Code == "53300": // too_many_connections
			return fmt.Sprintf("PostgreSQL at %s has no connection to spare (%s): run again once others have ended, or raise its max_connections",
				where, pgErr.Message)
		}
		return fmt.Sprintf("PostgreSQL at %s refused %q (%s, SQLSTATE %s): see its log, or set DATABASE_URL to a server that admits the user",
			where, c.User, pgErr.Message, pgErr.Code)
	}
	why := cause(err) // of "… dial tcp 127.0.0.1:1: connect: connection refused"
	if strings.HasSuffix(why, "no such host") {
		return fmt.Sprintf("PostgreSQL at %s is not reachable (no such host): set DATABASE_URL's host to one that resolves", where)
	}
	return fmt.Sprintf("PostgreSQL at %s is not reachable (%s): start it, or set DATABASE_URL to a server that is running", where, why)
}

func newLogger(e env, w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(e.get("INVOICED_LOG_LEVEL", "info")))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
