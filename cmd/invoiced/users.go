package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/accounts"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
)

const usersUsage = `Usage:
  invoiced users create --username NAME --role clerk|approver|admin [--display-name TEXT] [--email ADDRESS]
  invoiced users list [--limit N]
  invoiced users disable NAME
  invoiced users enable NAME
  invoiced users role NAME clerk|approver|admin
  invoiced users email NAME ADDRESS|--clear
  invoiced users passwd NAME
  invoiced users signin-link NAME`

const tokensUsage = `Usage:
  invoiced tokens create --username NAME [--name LABEL]
  invoiced tokens list NAME
  invoiced tokens revoke ID`

// opsActor is who the CLI acts as in the audit chain: whoever runs it
// holds the database's credentials, not an invoiced user's, so the OS
// account names them.
func opsActor(e env) accounts.Actor {
	return accounts.Actor{Name: "os:" + e.get("USER", e.get("LOGNAME", "unknown")), Via: capability.PathCLI}
}

// withAccounts runs fn with the accounts service over a small pool. The
// approval policy comes from the same INVOICED_APPROVAL_* settings serve
// reads, so a request a demotion returns to pending gets serve's
// pending window.
func withAccounts(ctx context.Context, e env, fn func(*accounts.Service) error) error {
	var policy approvals.Policy
	if err := approvalSettings(e, &policy); err != nil {
		return err
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	emit, err := app.NewEmitter(nil)
	if err != nil {
		return err
	}
	return fn(accounts.NewService(pool, approvals.NewService(pool, policy, nil, emit)))
}

func cmdUsers(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "users", args, usersUsage)
	}
	switch args[0] {
	case "create":
		return cmdUsersCreate(ctx, e, args[1:], stdout, stderr)
	case "list":
		return cmdUsersList(ctx, e, args[1:], stdout, stderr)
	case "disable", "enable", "role", "email":
		return cmdUsersChange(ctx, e, args[0], args[1:], stdout, stderr)
	case "passwd":
		return cmdUsersPasswd(ctx, e, args[1:], stdin, stdout, stderr)
	case "signin-link":
		return cmdUsersSignInLink(ctx, e, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usersUsage)
		return nil
	}
	return subcommandError(stderr, "users", args, usersUsage)
}

func cmdUsersCreate(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("users create --username NAME --role clerk|approver|admin",
		"Create a user and print a new API token for them, alone on the last line.\n"+
			"The token is shown once: only its SHA-256 is stored.", stderr)
	username := fs.String("username", "", "login name: lowercase letters, digits, '.', '_' or '-' (required)")
	role := fs.String("role", "", "clerk, approver or admin (required)")
	display := fs.String("display-name", "", "name shown to other users")
	email := fs.String("email", "", "where notifications reach them (unique, ignoring case)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if missing := missingFlags("--username", *username, "--role", *role); missing != "" {
		return usageError(fs, "%s, for example: invoiced users create --username alice --role clerk", missing)
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is not a flag; every value follows its flag, as in --username alice", fs.Arg(0))
	}
	r, err := identity.ParseRole(*role)
	if err != nil {
		return err
	}
	return withAccounts(ctx, e, func(svc *accounts.Service) error {
		u, token, err := svc.Create(ctx, opsActor(e),
			identity.UserCreateParams{Username: *username, DisplayName: *display, Role: r, Email: *email}, "created with the user")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created user %s with role %s; their API token (shown once):\n%s\n", u.Username, u.Role, token)
		return nil
	})
}

func cmdUsersList(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("users list [--limit N]", "List users, newest first.", stderr)
	limit := fs.Int("limit", page.MaxLimit, fmt.Sprintf("how many to show (1-%d)", page.MaxLimit))
	if err := parse(fs, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > page.MaxLimit {
		return problem.Invalid("limit", "must be from 1 to %d", page.MaxLimit)
	}
	return withAccounts(ctx, e, func(svc *accounts.Service) error {
		list, err := svc.List(ctx, page.Request{Limit: *limit})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USERNAME\tROLE\tSTATE\tEMAIL\tDISPLAY NAME\tID")
		for _, u := range list.Data {
			state, email := "enabled", "-"
			if u.Disabled {
				state = "disabled"
			}
			if u.Email != nil {
				email = *u.Email
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.Username, u.Role, state, email, u.DisplayName, u.ID)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if list.HasMore {
			fmt.Fprintln(stdout, "(more: raise --limit, or page GET /v1/users)")
		}
		return nil
	})
}

// cmdUsersChange is disable NAME, enable NAME, role NAME ROLE and email
// NAME ADDRESS|--clear.
func cmdUsersChange(ctx context.Context, e env, verb string, args []string, stdout, stderr io.Writer) error {
	var (
		p      accounts.Patch
		want   = 1
		usage  = "users " + verb + " NAME"
		detail = map[string]string{
			"disable": "Disable a user: their tokens and sessions stop working at once, and their\n" +
				"decisions on open approval requests stop counting.",
			"enable": "Enable a disabled user. Decisions voided when they were disabled stay void.",
			"role": "Change a user's role. A role that does not decide approvals (clerk) voids\n" +
				"their decisions on open approval requests.",
			"email": "Set a user's email address (unique, ignoring case), or --clear it.",
		}[verb]
	)
	switch verb {
	case "role":
		want, usage = 2, "users role NAME clerk|approver|admin"
	case "email":
		want, usage = 2, "users email NAME ADDRESS|--clear"
	}
	fs := flagSet(usage, detail, stderr)
	clearEmail := false
	if verb == "email" {
		fs.BoolVar(&clearEmail, "clear", false, "remove the address")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	// Flags may follow the name too (users email bob --clear).
	if len(rest) > 0 {
		if err := parse(fs, rest[1:]); err != nil {
			return err
		}
		rest = append([]string{rest[0]}, fs.Args()...)
	}
	if clearEmail {
		want = 1
	}
	if len(rest) != want {
		return usageError(fs, "%s", changeArgs(verb, clearEmail))
	}
	switch verb {
	case "disable", "enable":
		d := verb == "disable"
		p.Disabled = &d
	case "role":
		r, err := identity.ParseRole(rest[1])
		if err != nil {
			return err
		}
		p.Role = &r
	case "email":
		p.SetEmail = true
		if !clearEmail {
			p.Email = &rest[1]
		}
	}
	return withAccounts(ctx, e, func(svc *accounts.Service) error {
		u, err := svc.GetByUsername(ctx, rest[0])
		if err != nil {
			return err
		}
		up, err := svc.Update(ctx, opsActor(e), u.ID, etag.IfMatch{}, p)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, describeChange(u, up))
		return nil
	})
}

// changeArgs says what users VERB needs (it got other arguments).
func changeArgs(verb string, clearEmail bool) string {
	switch {
	case verb == "role":
		return "name the user and the role (clerk, approver or admin), for example: invoiced users role bob approver"
	case verb == "email" && clearEmail:
		return "name the user alone with --clear, for example: invoiced users email bob --clear"
	case verb == "email":
		return "name the user and the address (or --clear), for example: invoiced users email bob bob@example.com"
	}
	return "name one user, for example: invoiced users " + verb + " bob"
}

// missingFlags names the flags whose value is empty, of the flag, value
// pairs given, as a sentence's subject ("--username and --role are
// required"), or "".
func missingFlags(flagValues ...string) string {
	var names []string
	for i := 0; i+1 < len(flagValues); i += 2 {
		if flagValues[i+1] == "" {
			names = append(names, flagValues[i])
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0] + " is required"
	}
	return wordList(names, "and") + " are required"
}

// describeChange says what Update did to before, in a line.
func describeChange(before *identity.User, up *accounts.Updated) string {
	after := up.User
	var what []string
	if before.Disabled != after.Disabled {
		what = append(what, map[bool]string{true: "disabled", false: "enabled"}[after.Disabled])
	}
	if before.Role != after.Role {
		what = append(what, fmt.Sprintf("role %s → %s", before.Role, after.Role))
	}
	if emailOf(before) != emailOf(after) {
		if after.Email == nil {
			what = append(what, "email cleared")
		} else {
			what = append(what, "email "+*after.Email)
		}
	}
	if len(what) == 0 {
		return fmt.Sprintf("user %s: nothing to change", after.Username)
	}
	line := fmt.Sprintf("user %s: %s", after.Username, strings.Join(what, ", "))
	if n := len(up.Voided); n > 0 {
		line += fmt.Sprintf("; their approval no longer counts on %d open request(s), now waiting for other approvers", n)
	}
	return line
}

func emailOf(u *identity.User) string {
	if u.Email == nil {
		return ""
	}
	return *u.Email
}

func cmdTokens(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "tokens", args, tokensUsage)
	}
	switch args[0] {
	case "create":
		return cmdTokensCreate(ctx, e, args[1:], stdout, stderr)
	case "list":
		return cmdTokensList(ctx, e, args[1:], stdout, stderr)
	case "revoke":
		return cmdTokensRevoke(ctx, e, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, tokensUsage)
		return nil
	}
	return subcommandError(stderr, "tokens", args, tokensUsage)
}

func cmdTokensCreate(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("tokens create --username NAME",
		"Print a new API token for an existing user, alone on the last line.\n"+
			"The token is shown once: only its SHA-256 is stored.", stderr)
	username := fs.String("username", "", "the user the token acts for (required)")
	name := fs.String("name", "", "a label to tell tokens apart")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *username == "" || fs.NArg() > 0 {
		return usageError(fs, "name the user with --username, for example: invoiced tokens create --username alice")
	}
	return withAccounts(ctx, e, func(svc *accounts.Service) error {
		u, err := svc.GetByUsername(ctx, *username)
		if err != nil {
			return err
		}
		token, err := svc.TokenCreate(ctx, opsActor(e), u.ID, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "new API token for %s (shown once):\n%s\n", u.Username, token)
		return nil
	})
}

func cmdTokensList(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("tokens list NAME", "List a user's API tokens and OAuth grants, newest first, revoked ones too (never the token itself).", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fs, "name one user, for example: invoiced tokens list alice")
	}
	return withAccounts(ctx, e, func(svc *accounts.Service) error {
		u, err := svc.GetByUsername(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		list, err := svc.Tokens(ctx, u.ID, page.Request{Limit: page.MaxLimit})
		if err != nil {
			return err
		}
		stamp := func(t *time.Time) string {
			if t == nil {
				return "-"
			}
			return t.Format(time.RFC3339)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		// An OAuth grant (ADR-0023) is listed and revoked as a token;
		// KIND says which it is and what it may do.
		fmt.Fprintln(tw, "ID\tNAME\tKIND\tCREATED\tLAST USED\tREVOKED")
		for _, t := range list.Data {
			kind := "api token"
			if t.Scope != nil {
				kind = "oauth " + strings.ReplaceAll(*t.Scope, " ", "+")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, kind, t.CreatedAt.Format(time.RFC3339), stamp(t.LastUsedAt), stamp(t.RevokedAt))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if list.HasMore {
			fmt.Fprintln(stdout, "(more: page GET /v1/users/"+u.ID.String()+"/tokens)")
		}
		return nil
	})
}

func cmdTokensRevoke(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("tokens revoke ID", "Revoke an API token (its ID from tokens list): its next request is refused.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fs, "name one token by the ID `invoiced tokens list NAME` prints")
	}
	id, err := uuid.Parse(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("token %q not found: `invoiced tokens list NAME` prints the IDs of a user's tokens", fs.Arg(0))
	}
	return withAccounts(ctx, e, func(svc *accounts.Service) error {
		t, err := svc.TokenRevoke(ctx, opsActor(e), id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %s (%q) revoked at %s\n", t.ID, t.Name, t.RevokedAt.Format(time.RFC3339))
		return nil
	})
}
