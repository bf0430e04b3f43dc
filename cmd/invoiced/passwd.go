package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store"
	"golang.org/x/term"
)

// cmdUsersPasswd sets the web inbox password of user NAME. On a terminal it
// prompts twice without echo; otherwise it reads the first line of
// standard input, so scripts can pipe a password in without it ever being
// on a command line (where ps and shell history would show it).
func cmdUsersPasswd(ctx context.Context, e env, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("users passwd NAME",
		fmt.Sprintf("Set the password NAME signs in to the web inbox with (at least %d characters).\n"+
			"On a terminal it is asked for twice, without echo; otherwise the first line of\n"+
			"standard input is the password. Setting it ends the user's open web sessions.", identity.PasswordMinLength), stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fs, "name one user, for example: invoiced users passwd alice")
	}
	username := fs.Arg(0)
	password, err := readPassword(stdin, stderr)
	if err != nil {
		return err
	}
	if err := identity.PasswordValidate(password); err != nil {
		return err
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := identity.PasswordSet(ctx, pool, username, password); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "password set for %s; their open web sessions have ended\n", username)
	return nil
}

func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "New password: ")
		first, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		fmt.Fprint(prompt, "Repeat it: ")
		second, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if string(first) != string(second) {
			return "", errors.New("the two passwords differ; nothing was changed")
		}
		return string(first), nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password on standard input")
	}
	return line, nil
}
