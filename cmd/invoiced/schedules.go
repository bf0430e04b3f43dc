package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/schedules"
	"github.com/jackc/pgx/v5/pgxpool"
)

const schedulesUsage = `Usage:
  invoiced schedules list
  invoiced schedules show ID
  invoiced schedules runs ID
  invoiced schedules create --as USER [--file PATH]
  invoiced schedules update ID --as USER [--file PATH] [--if-version N]
  invoiced schedules delete ID --as USER
  invoiced schedules run`

func cmdSchedules(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "schedules", args, schedulesUsage)
	}
	switch args[0] {
	case "list":
		return cmdSchedulesList(ctx, e, args[1:], stdout, stderr)
	case "show":
		return cmdSchedulesShow(ctx, e, args[1:], stdout, stderr)
	case "runs":
		return cmdSchedulesRuns(ctx, e, args[1:], stdout, stderr)
	case "create":
		return cmdSchedulesCreate(ctx, e, args[1:], stdin, stdout, stderr)
	case "update":
		return cmdSchedulesUpdate(ctx, e, args[1:], stdin, stdout, stderr)
	case "delete":
		return cmdSchedulesDelete(ctx, e, args[1:], stdout, stderr)
	case "run":
		return cmdSchedulesRun(ctx, e, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, schedulesUsage)
		return nil
	}
	return subcommandError(stderr, "schedules", args, schedulesUsage)
}

// schedulesCLI is the schedules' service and the capabilities as serve
// builds them (app.New), over a pool of the command's own: the same
// settings (INVOICED_BUSINESS_TIMEZONE, the number prefixes, the
// approval TTLs), the same approval gate drawing standing allowances,
// so that a billing run started here drafts and issues as the job does.
// Its events are written in their facts' transactions, for the replicas
// running serve to deliver; app.New itself would start River here, and
// this process would work the cluster's mails and webhooks.
type schedulesCLI struct {
	pool *pgxpool.Pool
	svc  *schedules.Service
	caps *capability.Registry
}

func openSchedules(ctx context.Context, e env) (*schedulesCLI, error) {
	var invCfg invoices.Config
	if err := invoiceSettings(e, &invCfg); err != nil {
		return nil, err
	}
	policy := approvals.Policy{Capabilities: app.ConsequentialCapabilities(), Governed: app.GovernedCapabilities(), JudgedAlsoBy: allowances.JudgedAlsoBy}
	if err := approvalSettings(e, &policy); err != nil {
		return nil, err
	}
	emit, err := app.NewEmitter(nil)
	if err != nil {
		return nil, err
	}
	pool, err := smallPool(ctx, e)
	if err != nil {
		return nil, err
	}
	gate := approvals.NewGate(policy, emit)
	gate.UseAllowances(allowances.NewService(pool, gate, nil))
	c := &schedulesCLI{pool: pool, caps: capability.NewRegistry()}
	c.svc = schedules.NewService(pool, emit, schedules.Config{BusinessTimeZone: invCfg.BusinessTimeZone, Issue: app.Issuer(pool, c.caps)})
	for _, cp := range slices.Concat(invoices.Capabilities(invoices.NewService(pool, gate, emit, invCfg)), schedules.Capabilities(c.svc)) {
		if err := c.caps.Register(cp); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *schedulesCLI) close() { c.pool.Close() }

// as is the enabled user named by --as: a disabled one's token and
// sessions stop working, and so does their name here.
func (c *schedulesCLI) as(ctx context.Context, username string) (identity.Principal, error) {
	u, err := identity.UserGetByUsername(ctx, c.pool, username)
	if problem.HasCode(err, problem.CodeNotFound) {
		return identity.Principal{}, fmt.Errorf("there is no user %q to act as: `invoiced users list` lists them", username)
	}
	if err != nil {
		return identity.Principal{}, err
	}
	if u.Disabled {
		return identity.Principal{}, problem.Forbidden("user " + username + " is disabled")
	}
	return u.Principal(), nil
}

// invoke runs capability name on in as p by the CLI's path, as the API
// runs it on a request's body: the same schema, checks and audit.
func (c *schedulesCLI) invoke(ctx context.Context, name string, p identity.Principal, ifMatch etag.IfMatch, in *jsondoc.Doc) (any, error) {
	call, err := c.caps.PrepareDoc(name, in)
	if err != nil {
		return nil, err
	}
	call.Principal, call.Via, call.IfMatch = p, capability.PathCLI, ifMatch
	return c.caps.Invoke(ctx, call)
}

// scheduleArg parses ID, a schedule's, as the API's path does.
func scheduleArg(arg string) (uuid.UUID, error) {
	id, err := uuid.Parse(arg)
	if err != nil || len(arg) != len(uuid.Nil.String()) {
		return uuid.Nil, noSchedule(arg)
	}
	return id, nil
}

func noSchedule(id string) error {
	return fmt.Errorf("there is no schedule %q: `invoiced schedules list` prints the IDs of the schedules in force", id)
}

// named turns the service's "schedule not found" into which, and where
// to look.
func named(err error, id uuid.UUID) error {
	if problem.HasCode(err, problem.CodeNotFound) {
		return noSchedule(id.String())
	}
	return err
}

// readBody parses the JSON --file (or standard input) holds, as a
// request's body; what names what it must be. What only the schema can
// name (a body that is not an object) is left to it.
func readBody(file string, stdin io.Reader, what string) (*jsondoc.Doc, error) {
	raw, err := readJSONFile(file, stdin)
	if err != nil {
		return nil, err
	}
	doc, err := capability.ParseInput(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: give %s", sourceName(file), what)
	}
	return doc, nil
}

// pages gathers every page of a list, following next_cursor.
func pages[T any](next func(after *page.Cursor) (page.List[T], error)) (page.List[T], error) {
	all := page.List[T]{Data: []T{}}
	var after *page.Cursor
	for {
		l, err := next(after)
		if err != nil {
			return all, err
		}
		all.Data = append(all.Data, l.Data...)
		if !l.HasMore {
			return all, nil
		}
		if after, err = page.ParseCursor(*l.NextCursor); err != nil {
			return all, err
		}
	}
}

func cmdSchedulesList(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("schedules list",
		"Print the schedules in force, newest first, as JSON: GET /v1/schedules's pages\n"+
			"in one {\"data\": [...]}. Deleted schedules are left out; `schedules show ID` reads one.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is one word too many: schedules list takes none", fs.Arg(0))
	}
	c, err := openSchedules(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	all, err := pages(func(after *page.Cursor) (page.List[*schedules.Schedule], error) {
		q := map[string]any{"limit": page.MaxLimit}
		if after != nil {
			q["cursor"] = after.Encode()
		}
		raw, err := json.Marshal(q)
		if err != nil {
			return page.List[*schedules.Schedule]{}, err
		}
		in, err := capability.ParseInput(raw)
		if err != nil {
			return page.List[*schedules.Schedule]{}, err
		}
		out, err := c.invoke(ctx, schedules.CapList, identity.Principal{}, etag.IfMatch{}, in)
		if err != nil {
			return page.List[*schedules.Schedule]{}, err
		}
		return out.(page.List[*schedules.Schedule]), nil
	})
	if err != nil {
		return err
	}
	return printJSON(stdout, all)
}

// idArg parses fs's flags around one schedule ID (before or after them).
func idArg(fs *flag.FlagSet, args []string) (uuid.UUID, error) {
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
	if len(rest) != 1 {
		return uuid.Nil, usageError(fs, "name one schedule by the ID `invoiced schedules list` prints")
	}
	return scheduleArg(rest[0])
}

func cmdSchedulesShow(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("schedules show ID",
		"Print one schedule as JSON, as GET /v1/schedules/{id} answers it; an ended one has\n"+
			"its deleted_at. Its \"version\" is what `schedules update --if-version` names.", stderr)
	id, err := idArg(fs, args)
	if err != nil {
		return err
	}
	c, err := openSchedules(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	s, err := c.svc.Get(ctx, id)
	if err != nil {
		return named(err, id)
	}
	return printJSON(stdout, s)
}

func cmdSchedulesRuns(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("schedules runs ID",
		"Print a schedule's runs, newest first, as JSON: GET /v1/schedules/{id}/runs's pages in\n"+
			"one {\"data\": [...]}. A run is one period: drafted (invoice_id), issued (and the\n"+
			"allowance_id it drew), waiting (for approval_id), or failed (error); note says why a\n"+
			"draft of a schedule that issues was not issued.", stderr)
	id, err := idArg(fs, args)
	if err != nil {
		return err
	}
	c, err := openSchedules(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	all, err := pages(func(after *page.Cursor) (page.List[*schedules.Run], error) {
		return c.svc.Runs(ctx, id, page.Request{Limit: page.MaxLimit, After: after})
	})
	if err != nil {
		return named(err, id)
	}
	return printJSON(stdout, all)
}

func cmdSchedulesCreate(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("schedules create --as USER [--file PATH]",
		"Create a schedule from JSON as POST /v1/schedules takes it (--file, or standard input),\n"+
			"acting as a clerk or admin: the create-schedule capability, with the API's checks.\n"+
			"Every bad field is named and nothing is written. Prints the schedule (docs/schedules.md).\n"+
			"\n"+
			"  echo '{\"customer_id\": \"0193…\", \"every\": \"1 month\", \"start\": \"2027-01-31\", \"issue\": \"never\",\n"+
			"    \"lines\": [{\"description\": \"Hosting {period}\", \"quantity\": \"1\", \"unit_amount\": 10000, \"tax_rate_bps\": 1900}]}' |\n"+
			"    invoiced schedules create --as dora", stderr)
	as := fs.String("as", "", "username of the clerk or admin creating it (required; audited)")
	file := fs.String("file", "-", "the JSON file to read; - is standard input")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *as == "" {
		return usageError(fs, "--as is required: the username of the clerk or admin creating it, as in --as dora")
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is not a flag; give the JSON with --file PATH or on standard input", fs.Arg(0))
	}
	in, err := readBody(*file, stdin, "a schedule as POST /v1/schedules takes it (docs/schedules.md)")
	if err != nil {
		return err
	}
	c, err := openSchedules(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	p, err := c.as(ctx, *as)
	if err != nil {
		return err
	}
	out, err := c.invoke(ctx, schedules.CapCreate, p, etag.IfMatch{}, in)
	if err != nil {
		return err
	}
	return printJSON(stdout, out)
}

func cmdSchedulesUpdate(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("schedules update ID --as USER [--file PATH] [--if-version N]",
		"Change a schedule from JSON as PATCH /v1/schedules/{id} takes it (--file, or standard\n"+
			"input), acting as a clerk or admin: the update-schedule capability. Members left out\n"+
			"stay; null clears end, count, payment_terms_days or allowance_id; lines replace all\n"+
			"lines. With --if-version the change is made only to that version (as `schedules show`\n"+
			"prints it): a change made meanwhile is refused rather than overwritten. Every bad field\n"+
			"is named and nothing is written. Prints the schedule as changed.\n"+
			"\n"+
			"  echo '{\"end\": \"2027-12-31\"}' | invoiced schedules update 0193… --as dora --if-version 1", stderr)
	as := fs.String("as", "", "username of the clerk or admin changing it (required; audited)")
	file := fs.String("file", "-", "the JSON file to read; - is standard input")
	ifVersion := fs.Int64("if-version", 0, "change it only if it is at this version")
	id, err := idArg(fs, args)
	if err != nil {
		return err
	}
	if *as == "" {
		return usageError(fs, "--as is required: the username of the clerk or admin changing it, as in --as dora")
	}
	var match etag.IfMatch
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "if-version" {
			match = etag.MatchVersion(*ifVersion)
		}
	})
	in, err := readBody(*file, stdin, "the members to change, as PATCH /v1/schedules/{id} takes them (docs/schedules.md)")
	if err != nil {
		return err
	}
	if obj, ok := in.Value.(map[string]any); ok {
		// Before the ID joins the members, as the API's path id does.
		if path, dup := in.First(jsondoc.DuplicateKey); dup {
			return problem.Invalid(path, "%s", jsondoc.DuplicateKey.Message())
		}
		if _, ok := obj["schedule_id"]; ok {
			return problem.Invalid("schedule_id", "is the ID argument; leave it out of the JSON")
		}
		obj["schedule_id"] = id.String()
	}
	c, err := openSchedules(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	p, err := c.as(ctx, *as)
	if err != nil {
		return err
	}
	out, err := c.invoke(ctx, schedules.CapUpdate, p, match, in)
	if pe, ok := problem.As(err); ok && pe.Code == etag.CodeVersionMismatch {
		current, _ := pe.Extra["current_version"].(int64)
		return fmt.Errorf("schedule %s changed since version %d (it is at version %d now): run `invoiced schedules show %s` again and make the change there",
			id, *ifVersion, current, id)
	}
	if err != nil {
		return named(err, id)
	}
	return printJSON(stdout, out)
}

func cmdSchedulesDelete(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("schedules delete ID --as USER",
		"End a schedule, acting as a clerk or admin: no period is drafted from it any more; the\n"+
			"drafts and invoices it made stay. Prints the schedule with its deleted_at.", stderr)
	as := fs.String("as", "", "username of the clerk or admin ending it (required; audited)")
	id, err := idArg(fs, args)
	if err != nil {
		return err
	}
	if *as == "" {
		return usageError(fs, "--as is required: the username of the clerk or admin ending it, as in --as dora")
	}
	c, err := openSchedules(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	p, err := c.as(ctx, *as)
	if err != nil {
		return err
	}
	s, err := c.svc.Delete(ctx, p, capability.PathCLI, id)
	if err != nil {
		return named(err, id)
	}
	return printJSON(stdout, s)
}

func cmdSchedulesRun(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("schedules run",
		"Run the billing job now, as serve does every 5 minutes: draft each period of every\n"+
			"schedule that has begun by today in INVOICED_BUSINESS_TIMEZONE and has no run yet,\n"+
			"then issue the drafts of schedules that issue under an allowance. Each period is\n"+
			"drafted once, whoever runs it. Prints the runs it made as JSON, {\"data\": [...]}:\n"+
			"after downtime, or to see a new schedule's first draft without waiting.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is one word too many: schedules run takes none", fs.Arg(0))
	}
	c, err := openSchedules(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	made, err := c.svc.Run(ctx)
	if err != nil {
		return err
	}
	// Run returns each run as drafted; issuing came after, so each is
	// read again for what became of it.
	now, err := c.reread(ctx, made)
	if err != nil {
		return err
	}
	return printJSON(stdout, page.List[*schedules.Run]{Data: now})
}

// reread reads runs again, in their order, from their schedules' runs:
// newest first, so the pages end once every one of a schedule's is found.
func (c *schedulesCLI) reread(ctx context.Context, runs []*schedules.Run) ([]*schedules.Run, error) {
	found := map[uuid.UUID]*schedules.Run{}
	for _, r := range runs {
		if found[r.ID] != nil {
			continue
		}
		var after *page.Cursor
		for found[r.ID] == nil {
			l, err := c.svc.Runs(ctx, r.ScheduleID, page.Request{Limit: page.MaxLimit, After: after})
			if err != nil {
				return nil, err
			}
			for _, x := range l.Data {
				found[x.ID] = x
			}
			if !l.HasMore {
				break
			}
			if after, err = page.ParseCursor(*l.NextCursor); err != nil {
				return nil, err
			}
		}
	}
	out := make([]*schedules.Run, len(runs))
	for i, r := range runs {
		if out[i] = found[r.ID]; out[i] == nil {
			return nil, errors.New("run " + r.ID.String() + " of schedule " + r.ScheduleID.String() + " is gone")
		}
	}
	return out, nil
}
