package main

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/invoiced/invoiced/mail"
	"github.com/invoiced/invoiced/notify"
)

// notifySettings reads the mail settings. Without INVOICED_SMTP_URL no
// mail is sent (and serve says so once); with it, INVOICED_MAIL_FROM and
// INVOICED_PUBLIC_URL are required, since a mail needs a sender and its
// links a base.
func notifySettings(e env) (notify.Config, error) {
	var c notify.Config
	if v := e.get("INVOICED_APPROVAL_REMINDERS", ""); v != "" {
		r, err := notify.ParseReminders(v)
		if err != nil {
			return c, fmt.Errorf("INVOICED_APPROVAL_REMINDERS: %w", err)
		}
		c.Reminders = r
	}
	raw := e.get("INVOICED_SMTP_URL", "")
	if raw == "" {
		return c, nil
	}
	server, err := mail.ParseURL(raw)
	if err != nil {
		return c, fmt.Errorf("INVOICED_SMTP_URL %w", err)
	}
	from := e.get("INVOICED_MAIL_FROM", "")
	if from == "" {
		return c, errors.New("INVOICED_MAIL_FROM is required with INVOICED_SMTP_URL: the address mails come from, e.g. \"Invoiced <billing@example.com>\"")
	}
	if c.Sender, err = mail.NewSender(server, from); err != nil {
		return c, fmt.Errorf("INVOICED_MAIL_FROM %w", err)
	}
	c.PublicURL = e.get("INVOICED_PUBLIC_URL", "")
	u, err := url.Parse(c.PublicURL)
	if c.PublicURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return c, fmt.Errorf("INVOICED_PUBLIC_URL is required with INVOICED_SMTP_URL: the http(s) address people open the inbox at, e.g. https://invoices.example.com, not %q", c.PublicURL)
	}
	return c, nil
}
