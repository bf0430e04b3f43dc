package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

const sellerUsage = `Usage:
  invoiced seller show [--json]
  invoiced seller set --as ADMIN [--file PATH]`

func cmdSeller(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return subcommandError(stderr, "seller", args, sellerUsage)
	}
	switch args[0] {
	case "show":
		return cmdSellerShow(ctx, e, args[1:], stdout, stderr)
	case "set":
		return cmdSellerSet(ctx, e, args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, sellerUsage)
		return nil
	}
	return subcommandError(stderr, "seller", args, sellerUsage)
}

// smallPool opens a small pool for one command that reads or sets a
// record (the seller, the reminder settings).
func smallPool(ctx context.Context, e env) (*pgxpool.Pool, error) {
	return store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
}

func cmdSellerShow(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("seller show [--json]",
		"Show who issues the invoices: what each invoice and credit note copies when it is issued.\n"+
			"--json prints it as GET /v1/seller answers it, with its version: edit that and give it\n"+
			"to `invoiced seller set` to change the seller.", stderr)
	asJSON := fs.Bool("json", false, "print JSON, as `invoiced seller set` reads it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "%q is one word too many: seller show takes none", fs.Arg(0))
	}
	pool, err := smallPool(ctx, e)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := seller.NewService(pool, nil).Get(ctx)
	if err != nil {
		if problem.HasCode(err, problem.CodeNotFound) {
			return fmt.Errorf("no seller is set yet: set it with `invoiced seller set --as ADMIN` (see `invoiced seller set --help`)")
		}
		return err
	}
	if *asJSON {
		return printJSON(stdout, s)
	}
	return printSeller(stdout, s)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printSeller writes s as a table of its facts, "-" for each it lacks.
func printSeller(w io.Writer, s *seller.Seller) error {
	by := "seeded from INVOICED_SELLER_*"
	if s.UpdatedBy != nil {
		by = "by " + s.UpdatedBy.Username
	}
	fmt.Fprintf(w, "seller version %d, set %s %s\n", s.Version, s.UpdatedAt.Format(time.RFC3339), by)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(label string, values ...string) {
		var shown []string
		for _, v := range values {
			if v = strings.TrimSpace(v); v != "" {
				shown = append(shown, v)
			}
		}
		if len(shown) == 0 {
			shown = []string{"-"}
		}
		for i, v := range shown {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(tw, "%s\t%s\n", label, v)
		}
	}
	a := s.Address
	row("legal_name", s.LegalName)
	row("trading_name", s.TradingName)
	row("address", append(append([]string{}, a.Lines...), a.Postcode+" "+a.City, a.Subdivision, string(a.Country))...)
	row("vat_id", string(s.VATID))
	row("tax_number", s.TaxNumber)
	row("registration", s.Registration)
	row("contact", s.Contact.Name, s.Contact.Phone, s.Contact.Email)
	var accounts []string
	for _, b := range s.BankAccounts {
		acc := b.IBAN.String()
		if b.BIC != "" {
			acc += " (BIC " + string(b.BIC) + ")"
		}
		accounts = append(accounts, acc)
	}
	row("bank_accounts", accounts...)
	terms := ""
	if s.PaymentTermsDays != nil {
		terms = fmt.Sprintf("%d days", *s.PaymentTermsDays)
	}
	row("payment_terms_days", terms)
	return tw.Flush()
}

// sellerFile is what `seller set` reads: the seller's fields as PUT
// /v1/seller takes them, and what `seller show --json` adds. Its version
// is the one the change is based on; updated_at and updated_by are the
// server's to set.
type sellerFile struct {
	seller.Details
	Version   *int64          `json:"version"`
	UpdatedAt json.RawMessage `json:"updated_at"`
	UpdatedBy json.RawMessage `json:"updated_by"`
}

func cmdSellerSet(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("seller set --as ADMIN [--file PATH]",
		"Set who issues the invoices, all of it at once, from JSON: the fields of PUT /v1/seller\n"+
			"(legal_name, trading_name, address {lines, postcode, city, subdivision, country},\n"+
			"vat_id, tax_number, registration, contact {name, phone, email},\n"+
			"bank_accounts [{iban, bic}], payment_terms_days); a field left out is empty.\n"+
			"It reads --file, or standard input without it (or with --file -).\n"+
			"\n"+
			"To change the seller, start from `invoiced seller show --json > seller.json`: its\n"+
			"\"version\" is the version the change is based on, and a change made meanwhile is\n"+
			"refused rather than overwritten (updated_at and updated_by in it are ignored).\n"+
			"Without a version it sets the first seller only. Every bad field is named and\n"+
			"nothing is written. Prints the seller it leaves.\n"+
			"\n"+
			"  invoiced seller show --json > seller.json   # edit seller.json, then\n"+
			"  invoiced seller set --as admin --file seller.json", stderr)
	var in sellerFile
	pool, u, err := adminChange(ctx, e, fs, args, stdin, "the seller as `invoiced seller show --json` prints it", &in)
	if err != nil {
		return err
	}
	defer pool.Close()
	pre := seller.IfNoneSet()
	if in.Version != nil {
		pre = seller.IfMatch(*in.Version)
	}
	s, err := seller.NewService(pool, nil).Set(ctx, u.Principal(), capability.PathCLI, in.Details, pre)
	if p, ok := problem.As(err); ok && p.Code == etag.CodeVersionMismatch {
		current, _ := p.Extra["current_version"].(int64)
		switch {
		case in.Version == nil:
			return fmt.Errorf("the seller is set already (version %d) and the JSON names no version: start from "+
				"`invoiced seller show --json`, which carries it, so that a change made meanwhile is not overwritten", current)
		case current == 0:
			return fmt.Errorf("no seller is set yet, so there is no version %d to change: leave \"version\" out to set the first", *in.Version)
		}
		return fmt.Errorf("the seller changed since version %d (it is at version %d now): run `invoiced seller show --json` again and make the change there", *in.Version, current)
	}
	if err != nil {
		return err
	}
	return printSeller(stdout, s)
}

// adminChange parses the flags of a `… set --as ADMIN [--file PATH]`
// command, reads the JSON the file (or standard input) holds into v, and
// opens a pool with the admin making the change; what names what the JSON
// must be ("the seller as … prints it"). The caller closes the pool.
func adminChange(ctx context.Context, e env, fs *flag.FlagSet, args []string, stdin io.Reader, what string, v any) (*pgxpool.Pool, *identity.User, error) {
	as := fs.String("as", "", "username of the admin making the change (required; audited)")
	file := fs.String("file", "-", "the JSON file to read; - is standard input")
	if err := parse(fs, args); err != nil {
		return nil, nil, err
	}
	if *as == "" {
		return nil, nil, usageError(fs, "--as is required: the username of the admin making the change, as in --as admin")
	}
	if fs.NArg() > 0 {
		return nil, nil, usageError(fs, "%q is not a flag; give the JSON with --file PATH or on standard input", fs.Arg(0))
	}
	raw, err := readJSONFile(*file, stdin)
	if err != nil {
		return nil, nil, err
	}
	if err := server.DecodeJSONReader(bytes.NewReader(raw), v); err != nil {
		if p, ok := problem.As(err); ok && p.Code == problem.CodeMalformedJSON {
			return nil, nil, fmt.Errorf("%s is not JSON (%s): give %s", sourceName(*file), p.Detail, what)
		}
		return nil, nil, err
	}
	pool, err := smallPool(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	u, err := identity.UserGetByUsername(ctx, pool, *as)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, u, nil
}

// readJSONFile reads path, or stdin for "-".
func readJSONFile(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --file: %w", err)
	}
	return raw, nil
}

func sourceName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}
