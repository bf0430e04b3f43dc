// Package reminders reminds customers of their overdue invoices
// (docs/reminders.md): the levels (days past due, wording per language)
// and whether reminders go out by themselves are an admin's settings; a
// periodic job mails each overdue invoice the highest level it reached
// and has not had, through sending's mail path (the PDF and the
// e-invoice the customer's format asks for); send-reminder sends one by
// hand. Never for a disputed invoice or a customer on hold, never twice
// for a level (a unique index on the sendings).
package reminders

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/problem"
)

// Wording is what a reminder's mail says in one language: a subject and
// a body, each a Go text/template over Data.
type Wording struct {
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Data is what a wording may name: {{.Number}}, {{.Seller}}, {{.Date}}
// (the issue date), {{.Due}}, {{.Total}}, {{.Balance}} (what is still
// owed), {{.DaysOverdue}} and {{.Level}}, written in the document's
// language.
type Data struct {
	Number, Seller, Date, Due, Total, Balance string
	DaysOverdue, Level                        int
}

// Level is one reminder level: it falls due DaysPastDue days after the
// invoice's due date.
type Level struct {
	Level       int                `json:"level"`
	DaysPastDue int                `json:"days_past_due"`
	Wording     map[string]Wording `json:"wording"`
}

// Settings are the reminder settings at one version.
type Settings struct {
	// Automatic: the job mails the reminders that fall due.
	Automatic bool `json:"automatic"`
	// StopAfterLevel: no automatic reminder past this level; nil for up
	// to the last.
	StopAfterLevel *int      `json:"stop_after_level"`
	Levels         []Level   `json:"levels"`
	Version        int64     `json:"version"`
	UpdatedAt      time.Time `json:"updated_at"`
	// UpdatedBy is the admin who made this version; nil for the defaults
	// the migration seeded.
	UpdatedBy *uuid.UUID `json:"updated_by"`
}

// ResourceVersion is the settings' version, sent as the ETag.
func (s *Settings) ResourceVersion() int64 { return s.Version }

// level returns level n, nil when there is none.
func (s *Settings) level(n int) *Level {
	if n < 1 || n > len(s.Levels) {
		return nil
	}
	return &s.Levels[n-1]
}

// LevelInput is a level as an admin sets it: its number is its place in
// the list.
type LevelInput struct {
	DaysPastDue *int               `json:"days_past_due"`
	Wording     map[string]Wording `json:"wording"`
}

// Input is what an admin sets, all of it at once.
type Input struct {
	Automatic      bool         `json:"automatic"`
	StopAfterLevel *int         `json:"stop_after_level"`
	Levels         []LevelInput `json:"levels"`
}

// Limits: ten levels is more than any dunning practice we know of (three
// is usual, Germany's courts expect none); ten years of days past due; a
// subject a mail client shows whole, a body of a page.
const (
	MaxLevels      = 10
	MaxDaysPastDue = 3650
	maxSubject     = 200
	maxBody        = 5000
)

// sample is what a wording is tried with when it is set, so that a
// template naming what Data has not is refused then, not when it is
// sent.
var sample = Data{Number: "INV-2026-000001", Seller: "Seller", Date: "2026-01-01", Due: "2026-01-31",
	Total: "100.00 EUR", Balance: "100.00 EUR", DaysOverdue: 7, Level: 1}

// Check returns in's levels, or a 422 VALIDATION_FAILED naming every
// field that is wrong: days past due from 1 to 3650, rising with the
// level; a wording for each language (en, de, fr) and no other, each a
// template over Data; stop_after_level one of the levels.
func (in Input) Check() ([]Level, error) {
	var bad []problem.FieldError
	fail := func(field, format string, args ...any) {
		bad = append(bad, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(in.Levels) == 0 {
		fail("levels", "must list at least one level")
	}
	if len(in.Levels) > MaxLevels {
		fail("levels", "must be at most %d levels, not %d", MaxLevels, len(in.Levels))
	}
	out := make([]Level, 0, len(in.Levels))
	prev := 0
	for i, l := range in.Levels {
		at := fmt.Sprintf("levels[%d]", i)
		lv := Level{Level: i + 1, Wording: map[string]Wording{}}
		switch d := l.DaysPastDue; {
		case d == nil:
			fail(at+".days_past_due", "is required: how many days after the due date level %d falls due", i+1)
		case *d < 1 || *d > MaxDaysPastDue:
			fail(at+".days_past_due", "must be from 1 (the day after the due date) to %d, not %d", MaxDaysPastDue, *d)
		case *d <= prev:
			fail(at+".days_past_due", "must be more than the level before's %d: levels fall due one after another", prev)
		default:
			lv.DaysPastDue, prev = *d, *d
		}
		for _, lang := range slices.Sorted(maps.Keys(l.Wording)) {
			if !slices.Contains(invoices.Languages, lang) {
				fail(at+".wording."+lang, "is not a language documents are written in; they are %s", strings.Join(invoices.Languages, ", "))
			}
		}
		for _, lang := range invoices.Languages {
			w, ok := l.Wording[lang]
			if !ok {
				fail(at+".wording."+lang, "is required: every level says what it says in each language (%s)", strings.Join(invoices.Languages, ", "))
				continue
			}
			w.Subject, w.Body = strings.TrimSpace(w.Subject), strings.TrimSpace(w.Body)+"\n"
			for _, f := range []struct {
				name, text string
				max        int
			}{{"subject", w.Subject, maxSubject}, {"body", w.Body, maxBody}} {
				field := at + ".wording." + lang + "." + f.name
				if msg := checkTemplate(f.text, f.max); msg != "" {
					fail(field, "%s", msg)
				}
			}
			if strings.ContainsAny(w.Subject, "\r\n") {
				fail(at+".wording."+lang+".subject", "must be one line")
			}
			lv.Wording[lang] = w
		}
		out = append(out, lv)
	}
	if s := in.StopAfterLevel; s != nil && (*s < 1 || *s > len(in.Levels)) {
		fail("stop_after_level", "must be one of the levels, 1 to %d, or null to go up to the last", len(in.Levels))
	}
	if len(bad) > 0 {
		return nil, problem.Validation(bad...)
	}
	return out, nil
}

// checkTemplate is why text is not a wording (empty when it is one).
func checkTemplate(text string, max int) string {
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return "is required"
	case !utf8.ValidString(text):
		return "must be UTF-8"
	case n > max:
		return fmt.Sprintf("must be at most %d characters, not %d", max, n)
	}
	t, err := parse(text)
	if err != nil {
		return "is not a template: " + err.Error()
	}
	if err := t.Execute(&bytes.Buffer{}, sample); err != nil {
		return "names what a reminder does not have (it has .Number, .Seller, .Date, .Due, .Total, .Balance, .DaysOverdue, .Level): " + err.Error()
	}
	return ""
}

func parse(text string) (*texttemplate.Template, error) {
	return texttemplate.New("wording").Option("missingkey=error").Parse(text)
}

// write renders a wording's text with d.
func write(text string, d Data) (string, error) {
	t, err := parse(text)
	if err != nil {
		return "", fmt.Errorf("reminder wording: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("reminder wording: %w", err)
	}
	return b.String(), nil
}
