package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

const policyUsage = `Usage:
  invoiced policy list [--version N]
  invoiced policy set --capability NAME --currency CODE --min-amount MINOR --approvers N --as ADMIN
  invoiced policy set --capability NAME --currency '*' --min-amount-major MAJOR --approvers N --as ADMIN
  invoiced policy delete RULE_ID --as ADMIN`

func cmdPolicy(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "policy", args, policyUsage)
	}
	switch args[0] {
	case "list":
		return cmdPolicyList(ctx, e, args[1:], stdout, stderr)
	case "set":
		return cmdPolicySet(ctx, e, args[1:], stdout, stderr)
	case "delete":
		return cmdPolicyDelete(ctx, e, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, policyUsage)
		return nil
	}
	return subcommandError(stderr, "policy", args, policyUsage)
}

// policyService opens a pool and the approval service over it, with the
// consequential capabilities the rules may name.
func policyService(ctx context.Context, e env) (*approvals.Service, *pgxpool.Pool, error) {
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return nil, nil, err
	}
	emit, err := app.NewEmitter(nil)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return approvals.NewService(pool, approvals.Policy{Capabilities: app.ConsequentialCapabilities(), Governed: app.GovernedCapabilities()}, nil, emit), pool, nil
}

func cmdPolicyList(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("policy list [--version N]",
		"Show the approval policy: how many distinct approvers a consequential call needs,\n"+
			"per capability and currency, in tiers. --version shows the rules in force at an\n"+
			"earlier version (an approval request names the version it was raised under).", stderr)
	version := fs.Int64("version", 0, "a past policy version (default: the one in force)")
	if err := parse(fs, args); err != nil {
		return err
	}
	svc, pool, err := policyService(ctx, e)
	if err != nil {
		return err
	}
	defer pool.Close()
	set, err := svc.PolicyGet(ctx, *version)
	if err != nil {
		return err
	}
	return printPolicy(stdout, set)
}

// printPolicy writes set as a table, one tier a line, and says which
// consequential capabilities have no tier (one approver always).
func printPolicy(w io.Writer, set *approvals.RuleSet) error {
	by := "the initial migration"
	if set.ChangedBy != nil {
		by = set.ChangedBy.Username
	}
	fmt.Fprintf(w, "approval policy version %d, made %s by %s\n", set.Version, set.ChangedAt.Format(time.RFC3339), by)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCAPABILITY\tCURRENCY\tAT OR ABOVE\tAPPROVERS\tSUMMED OVER\tDECIDED BY")
	for _, r := range set.Rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Capability, r.Currency, threshold(r), r.Approvers, window(r), decidedBy(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var bare []string
	for _, c := range app.ConsequentialCapabilities() {
		if !slices.ContainsFunc(set.Rules, func(r approvals.Rule) bool { return r.Capability == c }) {
			bare = append(bare, c)
		}
	}
	fmt.Fprintf(w, "Below a capability's lowest tier one approver decides, none for %s. A currency with tiers of its own uses only those; * is every other currency.\n",
		strings.Join(app.GovernedCapabilities(), ", "))
	fmt.Fprintln(w, "A tier summed over days compares the sum of the calls in its scope over those days, plus the call.")
	if len(bare) > 0 {
		fmt.Fprintf(w, "No tiers (one approver always): %s\n", strings.Join(bare, ", "))
	}
	return nil
}

// usernames splits a comma-separated list; nil for none.
func usernames(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// decidedBy renders who decides a tier's calls: "anyone" (every approver
// and admin), or its deciders and escalation.
func decidedBy(r approvals.Rule) string {
	if r.Deciders == nil {
		return "anyone"
	}
	out := audience(*r.Deciders)
	if e := r.Escalation; e != nil {
		out += fmt.Sprintf(", after %s also %s", time.Duration(e.After), audience(e.Audience))
	}
	return out
}

func audience(a approvals.Audience) string {
	var parts []string
	for _, u := range a.Users {
		parts = append(parts, u.Username)
	}
	switch a.Role {
	case identity.RoleAdmin:
		parts = append(parts, "admins")
	case identity.RoleApprover:
		parts = append(parts, "approvers and admins")
	}
	return strings.Join(parts, "+")
}

// window renders a tier's window: "-" for the call's amount alone.
func window(r approvals.Rule) string {
	if r.WindowDays == nil {
		return "-"
	}
	return fmt.Sprintf("%d days, same %s", *r.WindowDays, strings.ReplaceAll(string(*r.Scope), "_", " and "))
}

// threshold renders a tier's threshold: an amount of its currency, or a
// number of major units of whichever currency an invoice is in.
func threshold(r approvals.Rule) string {
	if r.MinAmount != nil {
		return fmt.Sprintf("%s (%d minor units)", money.Display(*r.MinAmount, r.Currency), *r.MinAmount)
	}
	return fmt.Sprintf("%d major units of the invoice's currency", *r.MinAmountMajor)
}

// policyChange runs change as the admin named by --as and prints the
// policy it leaves; the service checks that the user is an enabled admin.
func policyChange(ctx context.Context, e env, as string, stdout io.Writer,
	change func(svc *approvals.Service, p identity.Principal) (*approvals.RuleSet, error),
) error {
	svc, pool, err := policyService(ctx, e)
	if err != nil {
		return err
	}
	defer pool.Close()
	u, err := identity.UserGetByUsername(ctx, pool, as)
	if err != nil {
		return err
	}
	set, err := change(svc, u.Principal())
	if err != nil {
		return err
	}
	return printPolicy(stdout, set)
}

func cmdPolicySet(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("policy set --capability NAME --currency CODE|'*' (--min-amount MINOR | --min-amount-major MAJOR) --approvers N [--window-days N --scope WHOSE] [--deciders USERS --deciders-role ROLE [--escalate-after D --escalate-to USERS --escalate-role ROLE]] --as ADMIN",
		"Set a tier of the approval policy: calls of a capability on an amount in a currency\n"+
			"at or above the threshold need N distinct approvers. It replaces the tier of the same\n"+
			"capability, currency and threshold, else adds one. A rule for one currency states its\n"+
			"threshold in minor units (--min-amount 1000000 with EUR is 10,000.00 EUR; with JPY,\n"+
			"1,000,000 yen); a rule for any currency ('*') in major units (--min-amount-major).\n"+
			"With --window-days and --scope the amount compared is the sum of the capability's\n"+
			"calls of the same requester, customer or both over those days, plus the call.\n"+
			"With --deciders and/or --deciders-role only those decide the tier's calls; with\n"+
			"--escalate-after, a request still pending after that long may be decided by\n"+
			"--escalate-to and/or --escalate-role too (never by fewer approvals).\n"+
			"Prints the policy's new version.", stderr)
	var in approvals.RuleInput
	fs.StringVar(&in.Capability, "capability", "", "a governed capability: "+strings.Join(append(app.ConsequentialCapabilities(), app.GovernedCapabilities()...), ", "))
	fs.StringVar(&in.Currency, "currency", "", "an ISO 4217 code, or '*' for every currency without tiers of its own")
	minAmount := fs.Int64("min-amount", 0, "threshold in minor units of --currency")
	minMajor := fs.Int64("min-amount-major", 0, "threshold in major units, for --currency '*'")
	fs.IntVar(&in.Approvers, "approvers", 0, "distinct approvers needed, 1 to 10 (0 to 10 for "+strings.Join(app.GovernedCapabilities(), ", ")+")")
	windowDays := fs.Int("window-days", 0, "sum the calls of the last N days (1 to 366) with this one; needs --scope")
	scope := fs.String("scope", "", "whose calls --window-days sums: requester, customer or requester_customer")
	deciders := fs.String("deciders", "", "comma-separated usernames of the approvers and admins who decide the tier's calls")
	decidersRole := fs.String("deciders-role", "", "approver (every approver and admin) or admin: who decides besides --deciders")
	escAfter := fs.String("escalate-after", "", "a duration such as 24h after which a pending request escalates")
	escTo := fs.String("escalate-to", "", "comma-separated usernames who may decide once it escalates")
	escRole := fs.String("escalate-role", "", "approver or admin: who may decide once it escalates")
	as := fs.String("as", "", "username of the admin making the change (required; audited)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *as == "" {
		return usageError(fs, "--as is required: the username of the admin making the change, as in --as admin")
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is not a flag; every value follows its flag, as in --currency EUR", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "min-amount":
			in.MinAmount = minAmount
		case "min-amount-major":
			in.MinAmountMajor = minMajor
		case "window-days":
			in.WindowDays = windowDays
		case "scope":
			in.Scope = scope
		case "deciders", "deciders-role":
			in.Deciders = &approvals.AudienceInput{Role: *decidersRole, Users: usernames(*deciders)}
		case "escalate-after", "escalate-to", "escalate-role":
			in.Escalation = &approvals.EscalationInput{After: *escAfter, Role: *escRole, Users: usernames(*escTo)}
		}
	})
	return policyChange(ctx, e, *as, stdout, func(svc *approvals.Service, p identity.Principal) (*approvals.RuleSet, error) {
		return svc.PolicySet(ctx, p, capability.PathCLI, in, etag.IfMatch{})
	})
}

func cmdPolicyDelete(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("policy delete RULE_ID --as ADMIN",
		"Take a tier out of the approval policy (RULE_ID as `invoiced policy list` prints it).\n"+
			"Open requests keep what they need: a looser policy never lowers a request's count.", stderr)
	as := fs.String("as", "", "username of the admin making the change (required; audited)")
	id, err := parseIDAs(fs, args, as, "approval rule")
	if err != nil {
		return err
	}
	return policyChange(ctx, e, *as, stdout, func(svc *approvals.Service, p identity.Principal) (*approvals.RuleSet, error) {
		return svc.PolicyDelete(ctx, p, capability.PathCLI, id, etag.IfMatch{})
	})
}
