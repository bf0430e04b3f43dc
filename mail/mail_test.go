package mail_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/mail"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in       string
		host     string
		port     int
		user     string
		security mail.Security
	}{
		{"smtp://mail.example.com", "mail.example.com", 587, "", mail.STARTTLSMandatory},
		{"smtp://u:p@mail.example.com:2525?starttls=opportunistic", "mail.example.com", 2525, "u", mail.STARTTLSOpportunistic},
		{"smtp://mailpit:1025?starttls=none", "mailpit", 1025, "", mail.NoTLS},
		{"smtps://u%40x:p@smtp.example.com", "smtp.example.com", 465, "u@x", mail.ImplicitTLS},
	} {
		s, err := mail.ParseURL(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.host, s.Host, c.in)
		require.Equal(t, c.port, s.Port, c.in)
		require.Equal(t, c.user, s.Username, c.in)
		require.Equal(t, c.security, s.Security, c.in)
		require.NotContains(t, s.String(), ":p@", "the password is masked in what is logged")
	}
	for _, bad := range []string{
		"", "mail.example.com", "http://x:y@mail.example.com", "smtp://", "smtp://h?starttls=maybe",
		"smtps://h?starttls=none", "smtp://h:0", "smtp://h:70000", "smtp://h?tls=1", "smtp://user:hunter2@h:x",
	} {
		_, err := mail.ParseURL(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), "hunter2", "an error never repeats the password")
	}
}

// A message reaches a real SMTP server with both parts, its stable
// Message-ID and Auto-Submitted; a wrong password and a server that is
// down are errors that never show the password.
func TestSendReachesARealServer(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	server, err := mail.ParseURL(srv.URL())
	require.NoError(t, err)
	s, err := mail.NewSender(server, "Invoiced <billing@example.com>")
	require.NoError(t, err)
	ctx := context.Background()
	msg := mail.Message{To: "bob@example.com", Subject: "Approval needed: Äpfel GmbH", Text: "Hello Bob,\nplease look.", HTML: "<p>Hello Bob</p>", ID: "ev1.u1@example.com"}
	require.NoError(t, s.Send(ctx, msg))
	got := srv.Wait(t, 1, 5*time.Second)
	require.Equal(t, "billing@example.com", got[0].From)
	require.Equal(t, []string{"bob@example.com"}, got[0].To)
	require.Equal(t, msg.Subject, got[0].Subject)
	require.Equal(t, "ev1.u1@example.com", got[0].MessageID)
	require.Equal(t, "auto-generated", got[0].Header.Get("Auto-Submitted"))
	require.Contains(t, got[0].Text, "please look.")
	require.Contains(t, got[0].HTML, "<p>Hello Bob</p>")

	wrong, err := mail.ParseURL(strings.Replace(srv.URL(), mailtest.Password, "hunter2", 1))
	require.NoError(t, err)
	s2, err := mail.NewSender(wrong, "billing@example.com")
	require.NoError(t, err)
	err = s2.Send(ctx, msg)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")

	srv.Down()
	err = s.Send(ctx, msg)
	require.Error(t, err)
	require.NotContains(t, err.Error(), mailtest.Password)
	require.Len(t, srv.Messages(), 1)
}

func TestNewSenderRefusesABadFromAddress(t *testing.T) {
	t.Parallel()
	_, err := mail.NewSender(mail.Server{Host: "h", Port: 25}, "not an address")
	require.Error(t, err)
}

// A subject is always RFC 2047 encoded words, so text that spells an
// encoded word (a customer named "=?utf-8?q?=E2=80=AE?=") reaches the
// reader as that literal text, never as the right-to-left override it
// spells; a long subject of many scripts comes back whole.
func TestSubjectIsAlwaysEncoded(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t)
	s := srv.Sender(t, "billing@example.com")
	ctx := context.Background()
	for i, subject := range []string{
		"Approval needed: =?utf-8?q?=E2=80=AEexe.fdp?= GmbH",
		"=?UTF-8?B?4oCu?=",
		"plain ASCII",
		"Rechnung für Ärzte — 請求書 " + strings.Repeat("Ωμέγα ", 20),
	} {
		require.NoError(t, s.Send(ctx, mail.Message{To: "bob@example.com", Subject: subject, Text: "x", HTML: "<p>x</p>", ID: fmt.Sprintf("s%d@example.com", i)}))
		got := srv.Wait(t, i+1, 5*time.Second)[i]
		require.Equal(t, subject, got.Subject)
		require.NotContains(t, got.Subject, "\u202e")
		require.True(t, strings.HasPrefix(got.Header.Get("Subject"), "=?UTF-8?B?"), got.Header.Get("Subject"))
	}
}
