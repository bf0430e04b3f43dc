// Package mail sends notification mails over SMTP (go-mail): the
// INVOICED_SMTP_URL setting, and one message at a time, plain text with an
// HTML alternative.
package mail

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gomail "github.com/wneessen/go-mail"
)

// Security is how the SMTP connection is protected.
type Security string

// The modes INVOICED_SMTP_URL can ask for.
const (
	// STARTTLSMandatory upgrades with STARTTLS or refuses to send.
	STARTTLSMandatory Security = "mandatory"
	// STARTTLSOpportunistic upgrades when the server offers STARTTLS.
	STARTTLSOpportunistic Security = "opportunistic"
	// NoTLS sends in the clear: a relay on the same host or network only.
	NoTLS Security = "none"
	// ImplicitTLS speaks TLS from the first byte (smtps://, port 465).
	ImplicitTLS Security = "tls"
)

// Server is a parsed INVOICED_SMTP_URL.
type Server struct {
	Host     string
	Port     int
	Username string
	Password string
	Security Security
	redacted string
}

// String is the URL with its password masked, for logs.
func (s Server) String() string { return s.redacted }

// ParseURL reads smtp://[user:pass@]host[:port][?starttls=mandatory|opportunistic|none]
// (default port 587, STARTTLS mandatory) or smtps://[user:pass@]host[:port]
// (implicit TLS, default port 465). Errors never repeat the password.
func ParseURL(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return Server{}, errors.New("must be smtp://[user:password@]host[:port][?starttls=mandatory|opportunistic|none] or smtps://[user:password@]host[:port]")
	}
	s := Server{Host: u.Hostname(), redacted: u.Redacted()}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	q := u.Query()
	switch u.Scheme {
	case "smtp":
		s.Port, s.Security = 587, STARTTLSMandatory
		if v := q.Get("starttls"); v != "" {
			switch Security(v) {
			case STARTTLSMandatory, STARTTLSOpportunistic, NoTLS:
				s.Security = Security(v)
			default:
				return Server{}, fmt.Errorf("starttls must be mandatory, opportunistic or none, not %q", v)
			}
		}
	case "smtps":
		s.Port, s.Security = 465, ImplicitTLS
		if q.Has("starttls") {
			return Server{}, errors.New("smtps:// is TLS from the start; starttls applies to smtp:// only")
		}
	default:
		return Server{}, fmt.Errorf("scheme must be smtp or smtps, not %q", u.Scheme)
	}
	for k := range q {
		if k != "starttls" {
			return Server{}, fmt.Errorf("unknown parameter %q (only starttls)", k)
		}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Server{}, fmt.Errorf("port must be 1–65535, not %q", p)
		}
		s.Port = n
	}
	return s, nil
}

// ParseAddress checks a sender address such as "Invoiced <billing@example.com>".
func ParseAddress(s string) (*mail.Address, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return nil, fmt.Errorf("must be an address such as billing@example.com or \"Invoiced <billing@example.com>\", not %q", s)
	}
	return a, nil
}

// Message is one mail to one recipient.
type Message struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html"`
	// ID is the Message-ID (without angle brackets), stable for the same
	// notification to the same person, so that a mail sent twice (a
	// timeout after the server accepted it) reads as one.
	ID string `json:"id"`
	// ReplyTo is where answers go, when not to the From address.
	ReplyTo string `json:"reply_to,omitempty"`
	// Attachments follow the text and its HTML alternative.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Attachment is a file a message carries.
type Attachment struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Data        []byte `json:"data"`
}

// Sender sends messages through one SMTP server from one address.
type Sender struct {
	server Server
	from   string
}

// NewSender returns a sender; from is the From address (ParseAddress).
func NewSender(server Server, from string) (*Sender, error) {
	if _, err := ParseAddress(from); err != nil {
		return nil, err
	}
	return &Sender{server: server, from: from}, nil
}

// Server is where the sender sends.
func (s *Sender) Server() Server { return s.server }

// sendTimeout bounds one connection: dial, TLS, auth and the message.
const sendTimeout = 15 * time.Second

// Send delivers m in a connection of its own.
func (s *Sender) Send(ctx context.Context, m Message) error {
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("to: %w", err)
	}
	msg.SetGenHeaderPreformatted(gomail.HeaderSubject, encodeWords(m.Subject))
	msg.SetMessageIDWithValue(m.ID)
	msg.SetDate()
	msg.SetUserAgent("invoiced")
	// RFC 3834: no out-of-office replies to a notification.
	msg.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	if m.ReplyTo != "" {
		if err := msg.ReplyTo(m.ReplyTo); err != nil {
			return fmt.Errorf("reply-to: %w", err)
		}
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	for _, a := range m.Attachments {
		if err := msg.AttachReader(a.Name, bytes.NewReader(a.Data), gomail.WithFileContentType(gomail.ContentType(a.ContentType))); err != nil {
			return fmt.Errorf("attach %s: %w", a.Name, err)
		}
	}
	c, err := gomail.NewClient(s.server.Host, s.options()...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("send to %s via %s: %s", m.To, s.server, redact(err.Error(), s.server.Password))
	}
	return nil
}

func (s *Sender) options() []gomail.Option {
	opts := []gomail.Option{gomail.WithPort(s.server.Port), gomail.WithTimeout(sendTimeout)}
	switch s.server.Security {
	case ImplicitTLS:
		opts = append(opts, gomail.WithSSL())
	case STARTTLSOpportunistic:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case NoTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if s.server.Username != "" {
		// Over TLS the strongest mechanism the server offers; in the clear
		// go-mail discovers none that sends the password as is, and PLAIN
		// is allowed to a loopback relay only.
		auth := gomail.SMTPAuthAutoDiscover
		if s.server.Security == NoTLS {
			auth = gomail.SMTPAuthPlain
		}
		opts = append(opts, gomail.WithSMTPAuth(auth),
			gomail.WithUsername(s.server.Username), gomail.WithPassword(s.server.Password))
	}
	return opts
}

// redact removes the password should a server echo it in an error.
func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "xxxxx")
}

// Domain is the From address's domain, for Message-IDs.
func (s *Sender) Domain() string {
	a, _ := ParseAddress(s.from) // checked by NewSender
	_, domain, _ := strings.Cut(a.Address, "@")
	return domain
}

// wordBytes is how many bytes of text one encoded word carries: 52
// base64 characters, so "=?UTF-8?B?…?=" is 64 and "Subject: " with the
// first word stays within RFC 5322's 78-character line.
const wordBytes = 39

// encodeWords writes s as RFC 2047 encoded words (UTF-8, base64), folded
// one a line, whatever s holds. go-mail, like mime.WordEncoder, leaves
// ASCII text as it is, and ASCII can spell an encoded word: a customer
// named "=?utf-8?q?=E2=80=AE?=" would reach an approver's mail client
// as a right-to-left override in the subject. Inside an encoded word it
// is the literal text it is: decoders never decode twice. Words are cut
// between runes, as RFC 2047 §5 asks.
func encodeWords(s string) string {
	var words []string
	for len(s) > 0 {
		n := min(len(s), wordBytes)
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // not UTF-8 at all: cut anywhere rather than loop
			n = min(len(s), wordBytes)
		}
		words = append(words, "=?UTF-8?B?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, "\r\n ")
}
