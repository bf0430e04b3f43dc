// Package mailtest runs a real SMTP server in the test process (go-smtp):
// it speaks SMTP with PLAIN authentication, keeps every message it
// accepts, parsed, and can go down and come back on the same address.
package mailtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/invoiced/invoiced/mail"
)

// The credentials the server accepts.
const (
	User     = "notifier"
	Password = "s3cret-smtp"
)

// Received is one accepted message.
type Received struct {
	From      string
	To        []string
	MessageID string
	Subject   string
	Header    netmail.Header
	Text      string
	HTML      string
	// Attachments are the files of a multipart/mixed message, in order.
	Attachments []Attachment
}

// Attachment is one file a message carried, decoded.
type Attachment struct {
	Name        string
	ContentType string
	Data        []byte
}

// Server is a running test SMTP server.
type Server struct {
	addr string
	mu   sync.Mutex
	srv  *smtp.Server
	msgs []Received
	errs []error
}

// Start listens on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: %v", err)
	}
	s := &Server{addr: ln.Addr().String()}
	s.serve(ln)
	t.Cleanup(s.Down)
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, err := range s.errs {
			t.Errorf("mailtest: a message the server could not parse: %v", err)
		}
	})
	return s
}

func (s *Server) serve(ln net.Listener) {
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	srv.Domain = "mailtest.local"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// URL is the INVOICED_SMTP_URL that reaches the server.
func (s *Server) URL() string {
	return fmt.Sprintf("smtp://%s:%s@%s?starttls=none", User, Password, s.addr)
}

// Sender returns a sender through this server from address from.
func (s *Server) Sender(t testing.TB, from string) *mail.Sender {
	t.Helper()
	server, err := mail.ParseURL(s.URL())
	if err != nil {
		t.Fatalf("mailtest: %v", err)
	}
	sender, err := mail.NewSender(server, from)
	if err != nil {
		t.Fatalf("mailtest: %v", err)
	}
	return sender
}

// Down stops the server: connections are refused until Up.
func (s *Server) Down() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Up listens again on the same address.
func (s *Server) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatalf("mailtest: listen again on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// Messages returns what was accepted so far.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// Wait returns the accepted messages once there are at least n, failing
// the test after timeout.
func (s *Server) Wait(t testing.TB, n int, timeout time.Duration) []Received {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := s.Messages()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailtest: %d of %d messages after %s", len(got), n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type session struct {
	s      *Server
	authed bool
	from   string
	to     []string
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != User || pass != Password {
			return errors.New("invalid credentials")
		}
		x.authed = true
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if !x.authed {
		return smtp.ErrAuthRequired
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := parse(raw)
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if err != nil {
		x.s.errs = append(x.s.errs, err)
		return err
	}
	m.From, m.To = x.from, append([]string(nil), x.to...)
	x.s.msgs = append(x.s.msgs, m)
	return nil
}

func (x *session) Reset() { x.from, x.to = "", nil }

func (x *session) Logout() error { return nil }

// parse reads a multipart/alternative message with a text and an HTML
// part, or a multipart/mixed one with such an alternative and attachments.
func parse(raw []byte) (Received, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Received{}, err
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return Received{}, err
	}
	out := Received{Header: msg.Header, Subject: subject, MessageID: strings.Trim(msg.Header.Get("Message-Id"), "<>")}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	switch {
	case err != nil:
		return Received{}, fmt.Errorf("content type %q: %v", mt, err)
	case mt == "multipart/alternative":
		err = out.alternative(msg.Body, params["boundary"])
	case mt == "multipart/mixed":
		err = out.mixed(msg.Body, params["boundary"])
	default:
		err = fmt.Errorf("content type %q is neither multipart/alternative nor multipart/mixed", mt)
	}
	if err != nil {
		return Received{}, err
	}
	if out.Text == "" || out.HTML == "" {
		return Received{}, errors.New("a message without both a text and an HTML part")
	}
	return out, nil
}

// alternative reads the text and HTML parts.
func (out *Received) alternative(r io.Reader, boundary string) error {
	mr := multipart.NewReader(r, boundary)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		body, err := partBody(p)
		if err != nil {
			return err
		}
		switch ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct {
		case "text/plain":
			out.Text = string(body)
		case "text/html":
			out.HTML = string(body)
		}
	}
}

// mixed reads the alternative and the attachments after it.
func (out *Received) mixed(r io.Reader, boundary string) error {
	mr := multipart.NewReader(r, boundary)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ct, params, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if err != nil {
			return err
		}
		if ct == "multipart/alternative" {
			if err := out.alternative(p, params["boundary"]); err != nil {
				return err
			}
			continue
		}
		body, err := partBody(p)
		if err != nil {
			return err
		}
		if p.FileName() == "" {
			return fmt.Errorf("a %s part without a file name", ct)
		}
		out.Attachments = append(out.Attachments, Attachment{Name: p.FileName(), ContentType: ct, Data: body})
	}
}

func partBody(p *multipart.Part) ([]byte, error) {
	var r io.Reader = p
	switch strings.ToLower(p.Header.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(p)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, p)
	}
	return io.ReadAll(r)
}
