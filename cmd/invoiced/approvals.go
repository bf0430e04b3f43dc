package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

const approvalsUsage = `Usage:
  invoiced approvals list [--status STATUS] [--limit N]
  invoiced approvals approve ID --as USER [--reason TEXT]
  invoiced approvals deny ID --reason TEXT --as USER`

func cmdApprovals(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "approvals", args, approvalsUsage)
	}
	switch args[0] {
	case "list":
		return cmdApprovalsList(ctx, e, args[1:], stdout, stderr)
	case "approve":
		return cmdApprovalsDecide(ctx, e, approvals.DecisionApprove, args[1:], stdout, stderr)
	case "deny":
		return cmdApprovalsDecide(ctx, e, approvals.DecisionDeny, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, approvalsUsage)
		return nil
	}
	return subcommandError(stderr, "approvals", args, approvalsUsage)
}

// cliApprovals is the approval service the CLI decides and lists with:
// its decisions and the expiries its list finds are events like the
// server's, worked by the replicas running serve.
func cliApprovals(pool *pgxpool.Pool) (*approvals.Service, error) {
	emit, err := app.NewEmitter(nil)
	if err != nil {
		return nil, err
	}
	return approvals.NewService(pool, approvals.Policy{}, nil, emit), nil
}

func cmdApprovalsList(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("approvals list [--status STATUS] [--limit N]",
		"List approval requests, newest first.", stderr)
	status := fs.String("status", "", "pending, approved, denied, expired, cancelled, superseded or consumed")
	limit := fs.Int("limit", 50, "how many to show (1-100)")
	if err := parse(fs, args); err != nil {
		return err
	}
	p := approvals.ListParams{Page: page.Request{Limit: *limit}}
	if *limit < 1 || *limit > 100 {
		return problem.Invalid("limit", "must be from 1 to 100")
	}
	if *status != "" {
		st, err := approvals.ParseStatus(*status)
		if err != nil {
			return err
		}
		p.Status = st
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	svc, err := cliApprovals(pool)
	if err != nil {
		return err
	}
	list, err := svc.List(ctx, p)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tCAPABILITY\tTARGET\tAMOUNT\tREQUESTED BY\tAPPROVALS\tEXPIRES")
	for _, a := range list.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s v%d\t%s\t%s\t%d/%d\t%s\n", a.ID, a.Status, a.Capability,
			a.Target.Type, a.Target.ID, a.Target.Version, money.Display(a.Amount, a.Currency),
			a.RequestedBy.Username, a.Approvals, a.RequiredApprovals, a.ExpiresAt.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if list.HasMore {
		fmt.Fprintln(stdout, "(more: narrow with --status or raise --limit)")
	}
	return nil
}

func cmdApprovalsDecide(ctx context.Context, e env, decision string, args []string, stdout, stderr io.Writer) error {
	name := "approvals approve ID --as USER [--reason TEXT]"
	if decision == approvals.DecisionDeny {
		name = "approvals deny ID --reason TEXT --as USER"
	}
	fs := flagSet(name, "Decide an approval request acting as a named approver or admin user;\n"+
		"the same rules apply as in the inbox (never your own request; a denial needs a reason).", stderr)
	as := fs.String("as", "", "username of the approver or admin deciding (required)")
	reason := fs.String("reason", "", "why (required to deny)")
	id, err := parseIDAs(fs, args, as, "approval")
	if err != nil {
		return err
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	u, err := identity.UserGetByUsername(ctx, pool, *as)
	if err != nil {
		return err
	}
	svc, err := cliApprovals(pool)
	if err != nil {
		return err
	}
	a, err := svc.Decide(ctx, u.Principal(), capability.PathCLI, id, etag.IfMatch{}, decision, *reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "approval %s is %s (%d of %d approvals)\n", a.ID, a.Status, a.Approvals, a.RequiredApprovals)
	return nil
}

// parseIDAs parses fs's flags around exactly one argument, the id of a
// what, which may come before or after them; as (--as) is required.
func parseIDAs(fs *flag.FlagSet, args []string, as *string, what string) (uuid.UUID, error) {
	if err := parse(fs, args); err != nil {
		return uuid.Nil, err
	}
	rest := fs.Args()
	if len(rest) > 0 {
		if err := parse(fs, rest[1:]); err != nil {
			return uuid.Nil, err
		}
		rest = append([]string{rest[0]}, fs.Args()...)
	}
	switch {
	case len(rest) != 1:
		return uuid.Nil, usageError(fs, "name one %s by its ID", what)
	case *as == "":
		return uuid.Nil, usageError(fs, "--as is required: the username of who acts, as in --as bob")
	}
	id, err := uuid.Parse(rest[0])
	if err != nil {
		return uuid.Nil, problem.NotFound(what + " " + rest[0])
	}
	return id, nil
}
