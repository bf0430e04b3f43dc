package main

import (
	"context"
	"fmt"
	"io"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

func cmdUsers(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "passwd" {
		return cmdUsersPasswd(ctx, e, args[1:], stdin, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "create" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprintln(stdout, "Usage: invoiced users create --username NAME --role clerk|approver|admin [--display-name TEXT]")
			return nil
		}
		fmt.Fprintln(stderr, "Usage: invoiced users create --username NAME --role clerk|approver|admin [--display-name TEXT]")
		return errUsage
	}
	fs := flagSet("users create --username NAME --role clerk|approver|admin",
		"Create a user and print a new API token for them, alone on the last line.\n"+
			"The token is shown once: only its SHA-256 is stored.", stderr)
	username := fs.String("username", "", "login name: lowercase letters, digits, '.', '_' or '-' (required)")
	role := fs.String("role", "", "clerk, approver or admin (required)")
	display := fs.String("display-name", "", "name shown to other users")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *username == "" || *role == "" {
		fs.Usage()
		return errUsage
	}
	r, err := identity.ParseRole(*role)
	if err != nil {
		return err
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	token, err := store.WithTxResult(ctx, pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
		u, err := identity.UserCreate(ctx, tx, identity.UserCreateParams{Username: *username, DisplayName: *display, Role: r})
		if err != nil {
			return "", err
		}
		return identity.TokenCreate(ctx, tx, u.ID, "created with the user")
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created user %s with role %s; their API token (shown once):\n%s\n", *username, r, token)
	return nil
}

func cmdTokens(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "Usage: invoiced tokens create --username NAME [--name LABEL]")
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			return nil
		}
		return errUsage
	}
	fs := flagSet("tokens create --username NAME",
		"Print a new API token for an existing user, alone on the last line.\n"+
			"The token is shown once: only its SHA-256 is stored.", stderr)
	username := fs.String("username", "", "the user the token acts for (required)")
	name := fs.String("name", "", "a label to tell tokens apart")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *username == "" {
		fs.Usage()
		return errUsage
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	u, err := identity.UserGetByUsername(ctx, pool, *username)
	if err != nil {
		return err
	}
	token, err := identity.TokenCreate(ctx, pool, u.ID, *name)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "new API token for %s (shown once):\n%s\n", u.Username, token)
	return nil
}
