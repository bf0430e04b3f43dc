package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

const allowancesUsage = `Usage:
  invoiced allowances list [--limit N]
  invoiced allowances show ID
  invoiced allowances revoke ID --as USER [--reason TEXT]`

func cmdAllowances(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "allowances", args, allowancesUsage)
	}
	switch args[0] {
	case "list":
		return cmdAllowancesList(ctx, e, args[1:], stdout, stderr)
	case "show":
		return cmdAllowancesShow(ctx, e, args[1:], stdout, stderr)
	case "revoke":
		return cmdAllowancesRevoke(ctx, e, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, allowancesUsage)
		return nil
	}
	return subcommandError(stderr, "allowances", args, allowancesUsage)
}

// withAllowances runs fn with the allowances' service over DATABASE_URL.
// The CLI grants none (granting passes the gate, as a call), so it needs
// no gate.
func withAllowances(ctx context.Context, e env, fn func(pool *pgxpool.Pool, svc *allowances.Service) error) error {
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(pool, allowances.NewService(pool, nil, nil))
}

func cmdAllowancesList(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("allowances list [--limit N]", "List standing allowances, newest first, with what is left of each.", stderr)
	limit := fs.Int("limit", 50, "how many to show (1-100)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > 100 {
		return problem.Invalid("limit", "must be from 1 to 100")
	}
	return withAllowances(ctx, e, func(_ *pgxpool.Pool, svc *allowances.Service) error {
		list, err := svc.List(ctx, allowances.ListParams{Page: page.Request{Limit: *limit}})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATUS\tCAPABILITY\tCUSTOMERS\tLEFT\tCALLS LEFT\tVALID UNTIL\tREQUESTED BY")
		for _, a := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s of %s\t%d of %d\t%s\t%s\n", a.ID, a.Status, a.Kind, customers(a),
				money.Display(a.RemainingTotal, a.Currency), money.Display(a.MaxTotal, a.Currency),
				a.RemainingCount, a.MaxCount, a.ValidUntil.Format(time.RFC3339), a.RequestedBy.Username)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if list.HasMore {
			fmt.Fprintln(stdout, "(more: raise --limit)")
		}
		return nil
	})
}

func customers(a *allowances.Allowance) string {
	if a.CustomerIDs == nil {
		return "all"
	}
	return fmt.Sprint(len(a.CustomerIDs))
}

func cmdAllowancesShow(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("allowances show ID", "Show one standing allowance: what it covers, what is left, who asked and who approved it.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fs, "name one allowance by its ID")
	}
	id, err := uuid.Parse(fs.Arg(0))
	if err != nil {
		return problem.NotFound("allowance " + fs.Arg(0))
	}
	return withAllowances(ctx, e, func(pool *pgxpool.Pool, svc *allowances.Service) error {
		a, err := svc.Get(ctx, id)
		if err != nil {
			return err
		}
		names, err := identity.UserDisplayNames(ctx, pool, a.Deciders)
		if err != nil {
			return err
		}
		var deciders []string
		for _, d := range a.Deciders {
			deciders = append(deciders, names[d])
		}
		scope := "every customer"
		if a.CustomerIDs != nil {
			ids := make([]string, len(a.CustomerIDs))
			for i, c := range a.CustomerIDs {
				ids[i] = c.String()
			}
			scope = strings.Join(ids, ", ")
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, row := range [][2]string{
			{"id", a.ID.String()}, {"status", string(a.Status)},
			{"capability", fmt.Sprintf("%s (%s)", a.Kind, strings.Join(a.Capabilities, ", "))},
			{"customers", scope},
			{"left", fmt.Sprintf("%s of %s, %d of %d calls", money.Display(a.RemainingTotal, a.Currency), money.Display(a.MaxTotal, a.Currency), a.RemainingCount, a.MaxCount)},
			{"valid until", a.ValidUntil.Format(time.RFC3339)},
			{"reason", a.Reason},
			{"requested by", a.RequestedBy.Username},
			{"approved by", strings.Join(deciders, ", ") + " (approval " + a.ApprovalID.String() + ")"},
		} {
			fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
		}
		if a.RevokedBy != nil {
			fmt.Fprintf(tw, "revoked\t%s by %s %s\n", a.RevokedAt.Format(time.RFC3339), a.RevokedBy.Username, a.RevokeReason)
		}
		return tw.Flush()
	})
}

func cmdAllowancesRevoke(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("allowances revoke ID --as USER [--reason TEXT]",
		"Revoke a standing allowance at once, acting as a named approver or admin user:\nno call draws it once this commits.", stderr)
	as := fs.String("as", "", "username of the approver or admin revoking (required)")
	reason := fs.String("reason", "", "why")
	id, err := parseIDAs(fs, args, as, "allowance")
	if err != nil {
		return err
	}
	return withAllowances(ctx, e, func(pool *pgxpool.Pool, svc *allowances.Service) error {
		u, err := identity.UserGetByUsername(ctx, pool, *as)
		if err != nil {
			return err
		}
		a, err := svc.Revoke(ctx, u.Principal(), capability.PathCLI, id, *reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "allowance %s is %s (%s and %d call(s) were left)\n", a.ID, a.Status, money.Display(a.RemainingTotal, a.Currency), a.RemainingCount)
		return nil
	})
}
