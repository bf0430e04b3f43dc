package notify

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	texttemplate "text/template"
	"time"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/mail"
	"github.com/invoiced/invoiced/money"
)

//go:embed templates
var templateFS embed.FS

// kind names a mail and its templates (templates/KIND.txt and .html).
type kind string

const (
	kindNeeded           kind = "needed"
	kindReminder         kind = "reminder"
	kindEscalated        kind = "escalated"
	kindDecided          kind = "decided"
	kindExpired          kind = "expired"
	kindEndpointDisabled kind = "endpoint_disabled"
)

var funcs = map[string]any{
	"ts": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
}

type mailTemplate struct {
	text *texttemplate.Template
	html *htmltemplate.Template
}

// templates parses every kind at start, so a broken template fails the
// process at start, not a job at 3 a.m.
var templates = func() map[kind]mailTemplate {
	out := map[kind]mailTemplate{}
	for _, k := range []kind{kindNeeded, kindReminder, kindEscalated, kindDecided, kindExpired, kindEndpointDisabled} {
		out[k] = mailTemplate{
			text: texttemplate.Must(texttemplate.New("").Funcs(funcs).ParseFS(templateFS, "templates/"+string(k)+".txt")),
			html: htmltemplate.Must(htmltemplate.New("").Funcs(funcs).ParseFS(templateFS, "templates/"+string(k)+".html")),
		}
	}
	return out
}()

// render builds the message of kind k for data to address to.
func render(k kind, to, id string, data any) (mail.Message, error) {
	t := templates[k]
	var subject, text, html bytes.Buffer
	if err := t.text.ExecuteTemplate(&subject, "subject", data); err != nil {
		return mail.Message{}, fmt.Errorf("%s subject: %w", k, err)
	}
	if err := t.text.ExecuteTemplate(&text, "text", data); err != nil {
		return mail.Message{}, fmt.Errorf("%s text: %w", k, err)
	}
	if err := t.html.ExecuteTemplate(&html, "html", data); err != nil {
		return mail.Message{}, fmt.Errorf("%s html: %w", k, err)
	}
	return mail.Message{To: to, Subject: subject.String(), Text: text.String(), HTML: html.String(), ID: id}, nil
}

// approvalMail is what an approval's mails show.
type approvalMail struct {
	Name       string
	Approval   *approvals.Approval
	Customer   string
	Total      string
	Lines      int
	Link       string
	DeniedBy   string
	DenyReason string
}

// snapshotSummary is what the mails read from an invoice snapshot; other
// targets have no customer or lines.
type snapshotSummary struct {
	Customer *struct {
		Name string `json:"name"`
	} `json:"customer"`
	Lines []json.RawMessage `json:"lines"`
}

func (s *Service) approvalMail(a *approvals.Approval) approvalMail {
	var snap snapshotSummary
	_ = json.Unmarshal(a.Snapshot, &snap) // a snapshot that is not an invoice's shows no customer
	m := approvalMail{
		Approval: a, Lines: len(snap.Lines),
		Total: money.Display(a.Amount, a.Currency),
		Link:  s.link("/approvals/" + a.ID.String()),
	}
	if snap.Customer != nil {
		m.Customer = snap.Customer.Name
	}
	for _, d := range a.Decisions {
		if d.Decision == approvals.DecisionDeny {
			m.DeniedBy, m.DenyReason = d.Approver.Username, d.Reason
		}
	}
	return m
}

// link is an absolute URL of a page of the web inbox. It carries no
// credential and decides nothing: the page asks for a signed-in session.
func (s *Service) link(path string) string { return s.publicURL + path }
