package main

import (
	"context"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/store/storetest"
	"github.com/stretchr/testify/require"
)

// TestCommandLineMistakesSayWhatToDo: a command line the CLI cannot run is
// exit status 2 with, first, one line naming the command and saying what
// is missing or wrong and how to write it, then the command's usage. No
// database is opened.
func TestCommandLineMistakesSayWhatToDo(t *testing.T) {
	t.Parallel()
	e := env{"DATABASE_URL": "postgres://127.0.0.1:1/never-opened"}
	for _, tc := range []struct {
		args  []string
		first string // the first line of standard error
		usage string // in the usage below it
	}{
		{[]string{"users", "create"}, "invoiced users create: --username and --role are required, for example: invoiced users create --username alice --role clerk", "-role string"},
		{[]string{"users", "create", "--username", "x"}, "invoiced users create: --role is required, for example: invoiced users create --username alice --role clerk", "-username string"},
		{[]string{"users", "create", "--role", "clerk"}, "invoiced users create: --username is required, for example:", ""},
		{[]string{"users", "create", "--username", "x", "--role", "clerk", "--bogus"}, "invoiced users create: -bogus is not a flag of this command; the flags are listed below", "-display-name string"},
		{[]string{"users", "create", "--username"}, "invoiced users create: -username needs a value: -username VALUE", ""},
		{[]string{"users", "create", "--username", "x", "--role", "clerk", "extra"}, `invoiced users create: "extra" is not a flag; every value follows its flag`, ""},
		{[]string{"users", "list", "--limit", "x"}, `invoiced users list: "x" is not a value -limit takes; see what it takes below`, "-limit int"},
		{[]string{"users"}, "invoiced users: name one of create, list, disable, enable, role, email, passwd or signin-link", "invoiced users create --username NAME"},
		{[]string{"users", "frob"}, `invoiced users: there is no "frob": name one of create, list,`, ""},
		{[]string{"users", "role", "bob"}, "invoiced users role: name the user and the role (clerk, approver or admin), for example: invoiced users role bob approver", ""},
		{[]string{"users", "disable"}, "invoiced users disable: name one user, for example: invoiced users disable bob", ""},
		{[]string{"users", "email", "bob", "--clear", "x"}, "invoiced users email: name the user alone with --clear", ""},
		{[]string{"users", "passwd"}, "invoiced users passwd: name one user, for example: invoiced users passwd alice", ""},
		{[]string{"tokens"}, "invoiced tokens: name one of create, list or revoke", ""},
		{[]string{"tokens", "create"}, "invoiced tokens create: name the user with --username, for example: invoiced tokens create --username alice", ""},
		{[]string{"tokens", "list"}, "invoiced tokens list: name one user, for example: invoiced tokens list alice", ""},
		{[]string{"tokens", "revoke"}, "invoiced tokens revoke: name one token by the ID `invoiced tokens list NAME` prints", ""},
		{[]string{"migrate"}, "invoiced migrate: name one of up, down, redo, status or version, for example: invoiced migrate up", ""},
		{[]string{"migrate", "sideways"}, "invoiced migrate: name one of up, down, redo, status or version", ""},
		{[]string{"approvals"}, "invoiced approvals: name one of list, approve or deny", ""},
		{[]string{"approvals", "approve"}, "invoiced approvals approve: name one approval by its ID", ""},
		{[]string{"approvals", "approve", "0190c4d8-0000-7000-8000-000000000000"}, "invoiced approvals approve: --as is required: the username of who acts, as in --as bob", ""},
		{[]string{"policy", "set", "--capability", "issue-invoice"}, "invoiced policy set: --as is required", ""},
		{[]string{"policy", "frob"}, `invoiced policy: there is no "frob": name one of list, set or delete`, ""},
		{[]string{"webhooks", "add"}, "invoiced webhooks add: URL is missing", ""},
		{[]string{"webhooks", "add", "https://x.example"}, "invoiced webhooks add: --events and --as are required, for example:", ""},
		{[]string{"webhooks", "disable", "a", "b", "--as", "ada"}, `invoiced webhooks disable: it takes one ENDPOINT_ID, then flags; "b" is one too many`, ""},
		{[]string{"audit"}, "invoiced audit: the subcommand is verify", "invoiced audit verify"},
		{[]string{}, "invoiced: name a command; they are listed below", "invoiced users create"},
		{[]string{"frob"}, `invoiced: there is no command "frob"; the commands are listed below`, "invoiced serve"},
	} {
		r := invoke(context.Background(), e, tc.args...)
		what := strings.Join(tc.args, " ")
		require.Equal(t, 2, r.code, "%s: %s", what, r.stderr)
		first, rest, _ := strings.Cut(r.stderr, "\n")
		require.True(t, strings.HasPrefix(first, tc.first), "%s: the first line is %q", what, first)
		require.NotContains(t, r.stderr, "flag provided but not defined", what)
		require.Contains(t, rest, tc.usage, what)
		require.Contains(t, rest, "Usage", "%s: the usage follows", what)
		require.Empty(t, r.stdout, what)
	}
}

// TestRuntimeErrorsSayWhatToDo: a refused value names the field and its
// rule (not the API's "the request has invalid fields"); a database
// without the schema names `invoiced migrate up`, one that does not exist
// or cannot be reached says so and what to set.
func TestRuntimeErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := invoke(ctx, env{"DATABASE_URL": storetest.URL(t)}, "users", "create", "--username", "x", "--role", "boss")
	require.Equal(t, 1, r.code)
	require.Equal(t, "invoiced: role must be one of clerk, approver, admin\n", r.stderr)

	r = invoke(ctx, env{"DATABASE_URL": storetest.EmptyURL(t)}, "users", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "has no invoiced schema: run `invoiced migrate up`")

	r = invoke(ctx, env{"DATABASE_URL": storetest.WithDatabase(storetest.ServerURL(t), "invoiced_not_there")}, "users", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `has no database "invoiced_not_there": create it`)

	r = invoke(ctx, env{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, "users", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "invoiced: PostgreSQL at 127.0.0.1:1 is not reachable (connection refused): start it")
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)

	// A standby (here a database set read-only) is not out of reach: it
	// answers, and refuses the write.
	readOnly := storetest.URL(t)
	pool := storetest.PoolFor(t, readOnly)
	_, err := pool.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`)
	require.NoError(t, err)
	r = invoke(ctx, env{"DATABASE_URL": readOnly}, "users", "create", "--username", "x", "--role", "clerk")
	require.Equal(t, 1, r.code)
	require.Equal(t, "invoiced: the database DATABASE_URL names takes no writes (a standby, or set read-only): set DATABASE_URL to the primary\n", r.stderr)

	r = invoke(ctx, env{"DATABASE_URL": storetest.URL(t)}, "tokens", "revoke", "nope")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "`invoiced tokens list NAME` prints the IDs")
}
