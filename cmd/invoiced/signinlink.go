package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/web"
)

// cmdUsersSignInLink prints a one-time link that opens the page where
// user NAME chooses a password and is signed in: how a new user, or one
// who forgot theirs, gets in without a password on a command line.
func cmdUsersSignInLink(ctx context.Context, e env, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("users signin-link NAME",
		fmt.Sprintf("Print a one-time sign-in link for NAME, alone on the last line: it opens the page\n"+
			"where they choose a password, and signs them in. It works once, for %d minutes;\n"+
			"only its SHA-256 is stored. Its address is INVOICED_PUBLIC_URL's, else the one\n"+
			"serve listens on (INVOICED_ADDR, on this host).", int(web.SignInLinkTTL.Minutes())), stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fs, "name one user, for example: invoiced users signin-link alice")
	}
	base, err := siteURL(e)
	if err != nil {
		return err
	}
	pool, err := store.Open(ctx, store.PoolConfig{URL: e.get("DATABASE_URL", ""), MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	u, err := identity.UserGetByUsername(ctx, pool, fs.Arg(0))
	if err != nil {
		return err
	}
	if u.Disabled {
		return fmt.Errorf("%s is disabled, and a link would not sign them in: enable them first (invoiced users enable %s)", u.Username, u.Username)
	}
	secret, expires, err := web.SignInLinkCreate(ctx, pool, u.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sign-in link for %s (%s), to set a password; it works once, until %s:\n%s%s?token=%s\n",
		u.Username, u.Role, expires.UTC().Format("15:04 UTC"), base, web.SignInLinkPath, url.QueryEscape(secret))
	return nil
}

// siteURL is where people open the service: INVOICED_PUBLIC_URL, else
// the address serve listens on (INVOICED_ADDR) on this host.
func siteURL(e env) (string, error) {
	if u := e.get("INVOICED_PUBLIC_URL", ""); u != "" {
		return strings.TrimRight(u, "/"), nil
	}
	return localURL(e.get("INVOICED_ADDR", ":8080"))
}

// localURL is the http:// address of a server listening on addr on this
// host: all interfaces (:8080, 0.0.0.0:8080) are reached on 127.0.0.1.
func localURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("INVOICED_ADDR must be host:port or :port, not %q", addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
