// Command invoiced is the invoicing back office an LLM agent can operate
// safely: `invoiced serve` runs the HTTP API, `invoiced migrate` manages the
// schema, and the other subcommands are for ops. See README.md and docs/operating.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	// The business time zone (INVOICED_BUSINESS_TIMEZONE) is read from the
	// binary's own tz database: the image is FROM scratch, with no
	// /usr/share/zoneinfo (about 450 KB).
	_ "time/tzdata"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], envFromOS(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `invoiced — an invoicing back office an LLM agent can operate safely.

Usage:
  invoiced serve [--migrate]                 run the HTTP API
  invoiced migrate up|down|redo|status|version [--yes]
                                             manage the database schema
  invoiced users create --username NAME --role clerk|approver|admin [--email ADDRESS]
                                             create a user and print a token
  invoiced users list                        list users
  invoiced users disable|enable NAME         take a user's access away, or give it back
  invoiced users role NAME ROLE              change a user's role
  invoiced users email NAME ADDRESS|--clear  set or clear a user's email address
  invoiced users passwd NAME                 set a user's web inbox password (prompt or stdin)
  invoiced users signin-link NAME            print a one-time link to set a password and sign in
  invoiced tokens create --username NAME     print a new API token for a user
  invoiced tokens list NAME | revoke ID      list a user's tokens; revoke one
  invoiced approvals list|approve|deny       list and decide approval requests
  invoiced policy list|set|delete            how many approvers a request needs (admins)
  invoiced allowances list|show|revoke       standing allowances; revoke one (approvers, admins)
  invoiced seller show|set                   who issues the invoices (set: admins)
  invoiced reminders show|set                reminder levels, automatic reminders (set: admins)
  invoiced schedules list|show|runs|create|update|delete|run
                                             recurring invoices (changes: clerks, admins); run the billing job now
  invoiced webhooks add|list|disable|enable|rotate-secret|deliveries|redeliver
                                             manage webhook endpoints
  invoiced healthcheck                       exit 0 when the local server is ready
  invoiced audit verify                      check the audit hash chain
  invoiced version                           print the version

Every subcommand takes --help. Configuration comes from the environment
(DATABASE_URL, INVOICED_ADDR, …); see docs/operating.md.
`

// run dispatches a subcommand and returns the process exit status.
func run(ctx context.Context, args []string, env env, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "invoiced: name a command; they are listed below\n\n%s", usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, env, args[1:], stdout, stderr)
	case "migrate":
		err = cmdMigrate(ctx, env, args[1:], stdin, stdout, stderr)
	case "users":
		err = cmdUsers(ctx, env, args[1:], stdin, stdout, stderr)
	case "tokens":
		err = cmdTokens(ctx, env, args[1:], stdout, stderr)
	case "approvals":
		err = cmdApprovals(ctx, env, args[1:], stdout, stderr)
	case "policy":
		err = cmdPolicy(ctx, env, args[1:], stdout, stderr)
	case "allowances":
		err = cmdAllowances(ctx, env, args[1:], stdout, stderr)
	case "seller":
		err = cmdSeller(ctx, env, args[1:], stdin, stdout, stderr)
	case "reminders":
		err = cmdReminders(ctx, env, args[1:], stdin, stdout, stderr)
	case "schedules":
		err = cmdSchedules(ctx, env, args[1:], stdin, stdout, stderr)
	case "audit":
		err = cmdAudit(ctx, env, args[1:], stdout, stderr)
	case "webhooks":
		err = cmdWebhooks(ctx, env, args[1:], stdout, stderr)
	case "healthcheck":
		err = cmdHealthcheck(ctx, env, args[1:], stdout, stderr)
	case "version":
		err = cmdVersion(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "invoiced: there is no command %q; the commands are listed below\n\n%s", args[0], usage)
		return 2
	}
	return exitCode(err, stderr)
}

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := flagSet("version", "Print the version of this binary (the git commit it was built from, or dev).", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is one word too many: version takes none", fs.Arg(0))
	}
	fmt.Fprintln(stdout, "invoiced", version)
	return nil
}
