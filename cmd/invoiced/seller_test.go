package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// sellerJSON is a seller as an admin writes it for `seller set`.
const sellerJSON = `{
  "legal_name": "Nordlicht GmbH",
  "address": {"lines": ["Hauptstraße 5"], "postcode": "10115", "city": "Berlin", "country": "de"},
  "vat_id": "DE 136 308 783",
  "contact": {"email": "billing@nordlicht.example"},
  "bank_accounts": [{"iban": "DE89 3704 0044 0532 0130 00", "bic": "COBADEFFXXX"}],
  "payment_terms_days": 14
}`

// sellerCounts is the seller's version (0: none) and its audit events.
func sellerCounts(t *testing.T, url string) (version, audited int) {
	t.Helper()
	pool := storetest.PoolFor(t, url)
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT coalesce((SELECT version FROM seller), 0),
		(SELECT count(*) FROM audit_events WHERE subject_type = 'seller')`).Scan(&version, &audited))
	return version, audited
}

// An admin sets the seller from JSON, on standard input or in a file;
// `seller show` prints it, and its --json is what `seller set` reads
// back to change it; a change made meanwhile, a bad field, a non-admin
// are refused, saying why, and write nothing.
func TestSellerCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	pool := storetest.PoolFor(t, url)
	e := env{"DATABASE_URL": url}
	for name, role := range map[string]identity.Role{"ada": identity.RoleAdmin, "bob": identity.RoleApprover} {
		_, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: role})
		require.NoError(t, err)
	}

	r := invoke(ctx, e, "seller", "show")
	require.Equal(t, 1, r.code)
	require.Equal(t, "invoiced: no seller is set yet: set it with `invoiced seller set --as ADMIN` (see `invoiced seller set --help`)\n", r.stderr)

	r = invokeWithInput(ctx, e, sellerJSON, "seller", "set", "--as", "ada")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"seller version 1, set ", " by ada\n", "legal_name          Nordlicht GmbH\n", "trading_name        -\n",
		"address             Hauptstraße 5\n                    10115 Berlin\n                    DE\n", "vat_id              DE136308783\n",
		"contact             billing@nordlicht.example\n", "bank_accounts       DE89 3704 0044 0532 0130 00 (BIC COBADEFFXXX)\n",
		"payment_terms_days  14 days\n"} {
		require.Contains(t, r.stdout, want)
	}
	shown := invoke(ctx, e, "seller", "show")
	require.Equal(t, 0, shown.code, shown.stderr)
	require.Equal(t, r.stdout, shown.stdout, "show prints what set printed")

	r = invoke(ctx, e, "seller", "show", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s))
	require.EqualValues(t, 1, s["version"])
	require.Equal(t, "DE89370400440532013000", s["bank_accounts"].([]any)[0].(map[string]any)["iban"])

	// Edit what show --json printed, as the help says, and set it from a file.
	s["trading_name"] = "Nordlicht Studio"
	edited, err := json.Marshal(s)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "seller.json")
	require.NoError(t, os.WriteFile(file, edited, 0o600))
	r = invoke(ctx, e, "seller", "set", "--as", "ada", "--file", file)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "seller version 2, set ")
	require.Contains(t, r.stdout, "trading_name        Nordlicht Studio\n")

	for name, tc := range map[string]struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		"no --as":         {sellerJSON, []string{"set"}, 2, "--as is required"},
		"stray word":      {sellerJSON, []string{"set", "--as", "ada", "seller.json"}, 2, `"seller.json" is not a flag; give the JSON with --file PATH`},
		"not an admin":    {sellerJSON, []string{"set", "--as", "bob"}, 1, "only an enabled admin may change the seller"},
		"unknown user":    {sellerJSON, []string{"set", "--as", "nobody"}, 1, "not found"},
		"no version":      {sellerJSON, []string{"set", "--as", "ada"}, 1, "the seller is set already (version 2) and the JSON names no version: start from `invoiced seller show --json`"},
		"stale version":   {string(edited), []string{"set", "--as", "ada"}, 1, "the seller changed since version 1 (it is at version 2 now)"},
		"not JSON":        {"legal_name: x", []string{"set", "--as", "ada"}, 1, "standard input is not JSON"},
		"no such file":    {"", []string{"set", "--as", "ada", "--file", filepath.Join(t.TempDir(), "none.json")}, 1, "cannot read --file"},
		"unknown field":   {`{"legal_name":"N","name":"N","version":2}`, []string{"set", "--as", "ada"}, 1, "name "},
		"bad IBAN":        {`{"legal_name":"N","version":2,"bank_accounts":[{"iban":"DE88370400440532013000"}]}`, []string{"set", "--as", "ada"}, 1, "bank_accounts[0].iban is not a valid IBAN"},
		"bad VAT id":      {`{"legal_name":"N","version":2,"vat_id":"GR094064321"}`, []string{"set", "--as", "ada"}, 1, "vat_id must start with EL for Greece"},
		"unknown country": {`{"legal_name":"N","version":2,"address":{"country":"XX"}}`, []string{"set", "--as", "ada"}, 1, "address.country must be an ISO 3166-1 alpha-2 country code"},
		"show extra word": {"", []string{"show", "x"}, 2, "one word too many"},
		"no subcommand":   {"", nil, 2, "name one of show or set"},
	} {
		r := invokeWithInput(ctx, e, tc.stdin, append([]string{"seller"}, tc.args...)...)
		require.Equal(t, tc.code, r.code, "%s: %s", name, r.stderr)
		require.Contains(t, r.stderr, tc.want, name)
		v, audited := sellerCounts(t, url)
		require.Equal(t, [2]int{2, 2}, [2]int{v, audited}, "%s wrote nothing", name)
	}
}

// On a database without a seller, serve seeds it once from
// INVOICED_SELLER_*, audited; afterwards it refuses to start while any of
// them is set, naming `invoiced seller show` and `set`, and starts
// without them.
func TestServeSeedsTheSellerOnceThenRefusesTheSettings(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t)
	seed := env{"DATABASE_URL": url, "INVOICED_ADDR": freeAddr(t), "INVOICED_SELLER_NAME": "Nordlicht GmbH",
		"INVOICED_SELLER_ADDRESS": `Hauptstraße 5\n10115 Berlin`, "INVOICED_SELLER_TAX_ID": "DE136308783"}
	r := serving(t, seed)()
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "the seller was seeded from INVOICED_SELLER_NAME, INVOICED_SELLER_ADDRESS, INVOICED_SELLER_TAX_ID")
	require.NotContains(t, r.stdout, "no seller, so no PDFs")
	v, audited := sellerCounts(t, url)
	require.Equal(t, [2]int{1, 1}, [2]int{v, audited})
	var event string
	require.NoError(t, storetest.PoolFor(t, url).QueryRow(context.Background(),
		`SELECT event->>'type' || ' ' || (event->>'via') FROM audit_events WHERE subject_type = 'seller'`).Scan(&event))
	require.Equal(t, "seller.seeded system", event)

	shown := invoke(context.Background(), env{"DATABASE_URL": url}, "seller", "show")
	require.Equal(t, 0, shown.code, shown.stderr)
	require.Contains(t, shown.stdout, "seller version 1, set ")
	require.Contains(t, shown.stdout, " seeded from INVOICED_SELLER_*\n")
	require.Contains(t, shown.stdout, "address             Hauptstraße 5\n                    10115 Berlin\n")
	require.Contains(t, shown.stdout, "vat_id              DE136308783\n")

	for _, key := range sellerKeys {
		e := env{"DATABASE_URL": url, "INVOICED_ADDR": freeAddr(t), "INVOICED_SELLER_NAME": "Nordlicht GmbH", key: "Someone Else"}
		r := invoke(context.Background(), e, "serve")
		require.Equal(t, 1, r.code, "%s: %s", key, r.stdout)
		require.Contains(t, r.stderr, "but the seller is data in the database (version 1): read it with `invoiced seller show`, change it with `invoiced seller set`", key)
		require.Contains(t, r.stderr, key)
	}
	v, audited = sellerCounts(t, url)
	require.Equal(t, [2]int{1, 1}, [2]int{v, audited}, "the refusals changed nothing")

	r = serving(t, env{"DATABASE_URL": url, "INVOICED_ADDR": freeAddr(t)})()
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "no seller, so no PDFs")
	require.False(t, strings.Contains(r.stdout, "seeded"), "seeded once")
}
