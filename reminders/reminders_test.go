package reminders_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/internal/clocktest"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/invoiced/invoiced/reminders"
	"github.com/invoiced/invoiced/sending"
	"github.com/stretchr/testify/require"
)

const mailFrom = "Nordlicht Billing <invoices@nordlicht.example>"

type bundle struct {
	ctx      context.Context
	h        *apptest.Harness
	cfg      app.Config
	smtp     *mailtest.Server
	clock    *clocktest.Clock
	admin    string
	clerk    string
	approver string
	// today is the clock's first day: invoices are issued on it.
	today time.Time
}

// setup runs the service with mail through a real SMTP server, its
// clock (the invoices', the sendings' and the reminders') a fake one
// standing at noon UTC today, and an admin, a clerk and an approver.
func setup(t *testing.T, cfg app.Config) *bundle {
	t.Helper()
	now := time.Now().UTC()
	b := &bundle{ctx: context.Background(), smtp: mailtest.Start(t),
		clock: clocktest.New(time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC))}
	b.today = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	cfg.Notify = notify.Config{Sender: b.smtp.Sender(t, mailFrom), PublicURL: "https://invoices.example.com"}
	cfg.Invoices.Now = b.clock.Now
	b.cfg = cfg
	b.h = apptest.New(t, apptest.Options{Config: cfg})
	_, b.admin = b.h.User(t, "admin", identity.RoleAdmin)
	_, b.clerk = b.h.User(t, "clerk", identity.RoleClerk)
	_, b.approver = b.h.User(t, "approver", identity.RoleApprover)
	return b
}

// customer makes a customer writing in lang, mailed at email.
func (b *bundle) customer(t *testing.T, name, email, lang string) *invoices.Customer {
	t.Helper()
	c := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: name})
	_, err := b.h.Pool.Exec(b.ctx, `UPDATE customers SET email = $2, language = $3 WHERE id = $1`, c.ID, email, lang)
	require.NoError(t, err)
	return c
}

// issued issues an invoice of 120.00 to c, due in days from today.
func (b *bundle) issued(t *testing.T, c *invoices.Customer, days int) *invoices.Invoice {
	t.Helper()
	due := invoices.Date{Time: b.today.AddDate(0, 0, days)}
	return invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &c.ID, DueDate: &due})
}

// at sets the clock to noon of the day days after today.
func (b *bundle) at(days int) {
	b.clock.Advance(b.today.AddDate(0, 0, days).Add(12 * time.Hour).Sub(b.clock.Now()))
}

func (b *bundle) settings(t *testing.T) reminders.Settings {
	t.Helper()
	r := b.h.Do(t, http.MethodGet, "/v1/reminders/settings", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var s reminders.Settings
	r.JSON(t, &s)
	return s
}

// input is s as an admin sets it again.
func input(s reminders.Settings) map[string]any {
	levels := make([]map[string]any, len(s.Levels))
	for i, l := range s.Levels {
		levels[i] = map[string]any{"days_past_due": l.DaysPastDue, "wording": l.Wording}
	}
	return map[string]any{"automatic": s.Automatic, "stop_after_level": s.StopAfterLevel, "levels": levels}
}

// automatic turns the automatic reminders on, as an admin.
func (b *bundle) automatic(t *testing.T) {
	t.Helper()
	in := input(b.settings(t))
	in["automatic"] = true
	r := b.h.Do(t, http.MethodPut, "/v1/reminders/settings", b.admin, in)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
}

// run runs the automatic reminders' job as its River periodic job does
// and returns how many reminders exist then. The periodic job itself may
// run at the same moment (it runs at start, on the fake clock): counting
// what exists, not what this run sent, holds either way.
func (b *bundle) run(t *testing.T) int {
	t.Helper()
	_, err := b.h.App.Reminders().RunDue(b.ctx)
	require.NoError(t, err)
	return b.count(t, `SELECT count(*) FROM sendings WHERE reminder_level IS NOT NULL`)
}

func (b *bundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, q, args...).Scan(&n))
	return n
}

// to is the mails received so far addressed to addr.
func (b *bundle) to(addr string) []mailtest.Received {
	var out []mailtest.Received
	for _, m := range b.smtp.Messages() {
		if len(m.To) == 1 && m.To[0] == addr {
			out = append(out, m)
		}
	}
	return out
}

// Done when: reminders go through a real SMTP server on the right day
// at the right level, in the customer's language, with the PDF; none for
// a paid, disputed or held invoice; none twice for a level; each
// recorded on the invoice (its sendings) and in the audit chain, and
// invoice.reminder_sent follows once the server took it.
func TestRemindersOnTheirDayInTheCustomersLanguage(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	subscribe(t, b)
	en := b.customer(t, "Acme Ltd", "ap@acme.example", "en")
	de := b.customer(t, "Müller GmbH", "buchhaltung@mueller.example", "de")
	fr := b.customer(t, "Dupont SA", "compta@dupont.example", "fr")
	held := b.customer(t, "Held Ltd", "ap@held.example", "en")
	invEN, invDE, invFR := b.issued(t, en, 10), b.issued(t, de, 10), b.issued(t, fr, 10)
	paid := b.issued(t, en, 10)
	disputed := b.issued(t, en, 10)
	heldInv := b.issued(t, held, 10)
	noDue := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &en.ID})

	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+paid.ID.String()+"/mark-paid", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPut, "/v1/invoices/"+disputed.ID.String()+"/dispute", b.clerk, map[string]any{"disputed": true, "reason": "hours not agreed"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPut, "/v1/customers/"+held.ID.String()+"/hold", b.clerk, map[string]any{"on_hold": true, "reason": "in talks"})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.disputed' AND event->>'subject_id' = $1`, disputed.ID.String()))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'customer.held' AND event->>'subject_id' = $1`, held.ID.String()))

	// Off until an admin turns them on.
	b.at(17)
	require.Equal(t, 0, b.run(t))
	b.automatic(t)

	// Level 1 falls due 7 days past the due date: not on the 6th.
	b.at(16)
	require.Equal(t, 0, b.run(t))
	b.at(17)
	require.Equal(t, 3, b.run(t))
	require.Equal(t, 3, b.run(t), "a second run the same day sends nothing again")
	msgs := b.smtp.Wait(t, 3, 20*time.Second)
	require.Len(t, msgs, 3)

	for _, tc := range []struct {
		inv           *invoices.Invoice
		to, subject   string
		text, balance string
		otherLanguage string
	}{
		{invEN, "ap@acme.example", "Reminder: invoice " + *invEN.Number + " from Nordlicht Consulting GmbH", "was due on", "120.00", "Zahlungserinnerung"},
		{invDE, "buchhaltung@mueller.example", "Zahlungserinnerung: Rechnung " + *invDE.Number + " von Nordlicht Consulting GmbH", "war am", "120,00", "Reminder"},
		{invFR, "compta@dupont.example", "Rappel : facture " + *invFR.Number + " de Nordlicht Consulting GmbH", "était à régler le", "120,00", "Reminder"},
	} {
		got := b.to(tc.to)
		require.Len(t, got, 1, tc.to)
		m := got[0]
		require.Equal(t, tc.subject, m.Subject)
		require.Contains(t, m.Text, tc.text)
		require.Contains(t, m.Text, tc.balance)
		require.NotContains(t, m.Text, tc.otherLanguage)
		require.Equal(t, "<billing@nordlicht.example>", m.Header.Get("Reply-To"))
		require.Len(t, m.Attachments, 1)
		require.Equal(t, *tc.inv.Number+".pdf", m.Attachments[0].Name)
		pdf := b.h.Do(t, http.MethodGet, "/v1/invoices/"+tc.inv.ID.String()+"/pdf", b.clerk, nil)
		require.Equal(t, http.StatusOK, pdf.StatusCode)
		require.Equal(t, pdf.Body, m.Attachments[0].Data, "the invoice's PDF as the API serves it")
	}
	require.Empty(t, b.to("ap@held.example"))
	require.Len(t, b.to("ap@acme.example"), 1, "the paid, the disputed and the undated invoice of Acme get none")
	for _, inv := range []*invoices.Invoice{paid, disputed, heldInv, noDue} {
		require.Zero(t, b.count(t, `SELECT count(*) FROM sendings WHERE invoice_id = $1`, inv.ID))
	}

	// Recorded on the invoice and in the audit chain; the event follows
	// once the server took it.
	sn := waitSent(t, b, invDE.ID, 1)
	require.Nil(t, sn.RequestedBy, "an automatic reminder has no user behind it")
	var data map[string]any
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->'data' FROM audit_events WHERE type = 'invoice.reminder_sent' AND event->>'subject_id' = $1`,
		invDE.ID.String()).Scan(&data))
	require.Equal(t, float64(1), data["level"])
	require.Equal(t, sn.ID.String(), data["sending_id"])
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.reminder_sent' AND event->>'actor' = 'system'`))
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM webhook_deliveries WHERE event_type = 'invoice.reminder_sent'`) == 3
	}, 20*time.Second, 50*time.Millisecond)
	var payload string
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT payload FROM webhook_deliveries WHERE event_type = 'invoice.reminder_sent' AND payload::jsonb->'data'->>'invoice_id' = $1`,
		invDE.ID.String()).Scan(&payload))
	var env struct {
		Data sending.Sending `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(payload), &env))
	require.Equal(t, 1, *env.Data.ReminderLevel)

	// Level 2 at 21 days past due; a payment in between spares that one.
	r = b.h.Do(t, http.MethodPost, "/v1/invoices/"+invFR.ID.String()+"/mark-paid", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	b.at(30)
	require.Equal(t, 3, b.run(t))
	b.at(31)
	require.Equal(t, 5, b.run(t))
	b.smtp.Wait(t, 5, 20*time.Second)
	require.Equal(t, "Zweite Mahnung: Rechnung "+*invDE.Number+" von Nordlicht Consulting GmbH", b.to("buchhaltung@mueller.example")[1].Subject)
	require.Contains(t, b.to("buchhaltung@mueller.example")[1].Text, "seit 21 Tagen überfällig")
	require.Len(t, b.to("compta@dupont.example"), 1)
	waitSent(t, b, invEN.ID, 2)

	// Resolving the dispute lets the reminders reach that invoice: at the
	// highest level it reached (2), not every level on the way.
	r = b.h.Do(t, http.MethodPut, "/v1/invoices/"+disputed.ID.String()+"/dispute", b.clerk, map[string]any{"disputed": false})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, 6, b.run(t))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM sendings WHERE invoice_id = $1 AND reminder_level = 2`, disputed.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.dispute_resolved'`))
}

// waitSent waits until invoice's reminder at level is sent and returns
// it as the invoice's sendings list shows it.
func waitSent(t *testing.T, b *bundle, invoice uuid.UUID, level int) sending.Sending {
	t.Helper()
	var found sending.Sending
	require.Eventually(t, func() bool {
		r := b.h.Do(t, http.MethodGet, "/v1/invoices/"+invoice.String()+"/sendings", b.clerk, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		var page struct{ Data []sending.Sending }
		r.JSON(t, &page)
		for _, sn := range page.Data {
			if sn.ReminderLevel != nil && *sn.ReminderLevel == level && sn.Status == sending.StatusSent {
				found = sn
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	return found
}

// Done when: none twice for a level, also when runs race: four runs at
// once on one replica and two on another send each invoice's reminder
// once, and mail it once.
func TestConcurrentRunsSendEachReminderOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	other := b.h.Replica(t, apptest.Options{Config: b.cfg})
	b.automatic(t)
	const n = 5
	for i := range n {
		c := b.customer(t, "Customer", "ap"+string(rune('a'+i))+"@example.com", "en")
		b.issued(t, c, 0)
	}
	b.at(7)
	var wg sync.WaitGroup
	sent := make(chan int, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := b.h
			if i%3 == 2 {
				h = other
			}
			res, err := h.App.Reminders().RunDue(b.ctx)
			require.NoError(t, err)
			sent <- res.Sent
		}()
	}
	wg.Wait()
	close(sent)
	total := 0
	for s := range sent {
		total += s
	}
	// The periodic job may have sent some at the same moment.
	require.LessOrEqual(t, total, n, "the runs together sent each reminder at most once")
	require.Equal(t, n, b.count(t, `SELECT count(*) FROM sendings WHERE reminder_level = 1`))
	require.Equal(t, n, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.reminder_sent'`))
	b.smtp.Wait(t, n, 20*time.Second)
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM sendings WHERE sent_at IS NOT NULL`) == n
	}, 20*time.Second, 50*time.Millisecond)
	require.Len(t, b.smtp.Messages(), n)
}

// Done when: the periodic River job sends the reminders by itself once
// an admin turned them on.
func TestThePeriodicJobSendsThem(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{ReminderInterval: time.Second})
	c := b.customer(t, "Acme Ltd", "ap@acme.example", "en")
	inv := b.issued(t, c, 0)
	b.at(7)
	b.automatic(t)
	m := b.smtp.Wait(t, 1, 60*time.Second)[0]
	require.Equal(t, "Reminder: invoice "+*inv.Number+" from Nordlicht Consulting GmbH", m.Subject)
	waitSent(t, b, inv.ID, 1)
}

// send-reminder sends one by hand (a clerk; bound), at the level due or
// the one named, once per level however many ask at once; refusals name
// why and write nothing.
func TestSendReminderByHand(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	c := b.customer(t, "Acme Ltd", "ap@acme.example", "en")
	inv := b.issued(t, c, 0)
	early := b.issued(t, c, 30)
	disputed := b.issued(t, c, 0)
	r := b.h.Do(t, http.MethodPut, "/v1/invoices/"+disputed.ID.String()+"/dispute", b.clerk, map[string]any{"disputed": true})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	b.at(3)

	path := "/v1/invoices/" + inv.ID.String() + "/remind"
	const n = 6
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := b.h.Do(t, http.MethodPost, path, b.clerk, map[string]any{"level": 1})
			if r.StatusCode == http.StatusConflict {
				require.Equal(t, reminders.CodeAlreadySent, r.Problem(t)["code"], "%s", r.Body)
			}
			codes <- r.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	accepted := 0
	for c := range codes {
		require.Contains(t, []int{http.StatusAccepted, http.StatusConflict}, c)
		if c == http.StatusAccepted {
			accepted++
		}
	}
	require.Equal(t, 1, accepted, "one reminder of level 1")
	sn := waitSent(t, b, inv.ID, 1)
	require.NotNil(t, sn.RequestedBy)

	// Without a level: the next one (level 2, early, by hand).
	r = b.h.Do(t, http.MethodPost, path, b.clerk, nil)
	require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
	var got sending.Sending
	r.JSON(t, &got)
	require.Equal(t, 2, *got.ReminderLevel)

	written := func() [3]int {
		return [3]int{b.count(t, `SELECT count(*) FROM sendings`), b.count(t, `SELECT count(*) FROM audit_events`),
			b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'sending.send'`)}
	}
	for _, tc := range []struct {
		name, path, token string
		body              any
		status            int
		code, field       string
	}{
		{"not overdue", "/v1/invoices/" + early.ID.String() + "/remind", b.clerk, nil, 409, reminders.CodeNotOverdue, ""},
		{"disputed", "/v1/invoices/" + disputed.ID.String() + "/remind", b.clerk, nil, 409, reminders.CodeDisputed, ""},
		{"sent already", path, b.clerk, map[string]any{"level": 2}, 409, reminders.CodeAlreadySent, ""},
		{"no such level", path, b.clerk, map[string]any{"level": 4}, 422, "VALIDATION_FAILED", "level"},
		{"level 0", path, b.clerk, map[string]any{"level": 0}, 422, "VALIDATION_FAILED", "level"},
		{"unknown member", path, b.clerk, map[string]any{"levl": 1}, 422, "VALIDATION_FAILED", "levl"},
		{"unknown invoice", "/v1/invoices/0190a0b0-0000-7000-8000-000000000000/remind", b.clerk, nil, 404, "NOT_FOUND", ""},
		{"approver", path, b.approver, nil, 403, "FORBIDDEN", ""},
		{"dispute: reason too long", "/v1/invoices/" + inv.ID.String() + "/dispute", b.clerk, map[string]any{"disputed": true, "reason": strings.Repeat("x", 501)}, 422, "VALIDATION_FAILED", "reason"},
		{"dispute: no disputed", "/v1/invoices/" + inv.ID.String() + "/dispute", b.clerk, map[string]any{"reason": "x"}, 422, "VALIDATION_FAILED", "disputed"},
		{"hold: approver", "/v1/customers/" + c.ID.String() + "/hold", b.approver, map[string]any{"on_hold": true}, 403, "FORBIDDEN", ""},
		{"hold: unknown customer", "/v1/customers/0190a0b0-0000-7000-8000-000000000000/hold", b.clerk, map[string]any{"on_hold": true}, 404, "NOT_FOUND", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := written()
			r := b.h.Do(t, http.MethodPost, tc.path, tc.token, tc.body)
			if strings.HasSuffix(tc.path, "/dispute") || strings.HasSuffix(tc.path, "/hold") {
				r = b.h.Do(t, http.MethodPut, tc.path, tc.token, tc.body)
			}
			require.Equal(t, tc.status, r.StatusCode, "%s", r.Body)
			p := r.Problem(t)
			require.Equal(t, tc.code, p["code"], "%s", r.Body)
			if tc.field != "" {
				require.Equal(t, tc.field, p["errors"].([]any)[0].(map[string]any)["field"], "%s", r.Body)
			}
			require.Equal(t, before, written())
		})
	}
}

// GET /v1/reminders/upcoming says what goes next and when, and the agent
// reads it (a read capability): the next level of each owing invoice,
// the day it falls due, whether the automatic reminders send it.
func TestUpcoming(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	c := b.customer(t, "Acme Ltd", "ap@acme.example", "de")
	soon := b.issued(t, c, 0)
	later := b.issued(t, c, 10)
	disputed := b.issued(t, c, 0)
	r := b.h.Do(t, http.MethodPut, "/v1/invoices/"+disputed.ID.String()+"/dispute", b.clerk, map[string]any{"disputed": true})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	b.at(8)

	var up struct {
		AsOf      string                       `json:"as_of"`
		Automatic bool                         `json:"automatic"`
		Data      []reminders.UpcomingReminder `json:"data"`
	}
	r = b.h.Do(t, http.MethodGet, "/v1/reminders/upcoming", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &up)
	require.False(t, up.Automatic)
	require.Equal(t, b.today.AddDate(0, 0, 8).Format(time.DateOnly), up.AsOf)
	require.Len(t, up.Data, 2, "the disputed one gets none")
	require.Equal(t, soon.ID, up.Data[0].InvoiceID)
	require.Equal(t, 1, up.Data[0].Level)
	require.Equal(t, b.today.AddDate(0, 0, 8), up.Data[0].On.Time, "due already: today")
	require.Equal(t, "de", up.Data[0].Language)
	require.Equal(t, "ap@acme.example", up.Data[0].To)
	require.False(t, up.Data[0].Automatic, "automatic reminders are off")
	require.Equal(t, later.ID, up.Data[1].InvoiceID)
	require.Equal(t, b.today.AddDate(0, 0, 17), up.Data[1].On.Time, "7 days past its due date")

	// Automatic, stopping after level 1: the run sends soon's level 1;
	// its level 2 is then ahead, for a clerk to send.
	in := input(b.settings(t))
	in["automatic"], in["stop_after_level"] = true, 1
	r = b.h.Do(t, http.MethodPut, "/v1/reminders/settings", b.admin, in)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, 1, b.run(t))
	r = b.h.Do(t, http.MethodPost, "/v1/capabilities/list-upcoming-reminders/invoke", b.clerk, map[string]any{"input": map[string]any{"limit": 1}})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var out struct {
		Output struct {
			Automatic  bool                         `json:"automatic"`
			Data       []reminders.UpcomingReminder `json:"data"`
			HasMore    bool                         `json:"has_more"`
			NextCursor string                       `json:"next_cursor"`
		} `json:"output"`
	}
	r.JSON(t, &out)
	require.True(t, out.Output.Automatic)
	require.Len(t, out.Output.Data, 1)
	require.True(t, out.Output.HasMore)
	require.Equal(t, later.ID, out.Output.Data[0].InvoiceID)
	require.True(t, out.Output.Data[0].Automatic)
	r = b.h.Do(t, http.MethodGet, "/v1/reminders/upcoming?limit=1&cursor="+out.Output.NextCursor, b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r.JSON(t, &up)
	require.Len(t, up.Data, 1)
	require.Equal(t, soon.ID, up.Data[0].InvoiceID)
	require.Equal(t, 2, up.Data[0].Level)
	require.Equal(t, b.today.AddDate(0, 0, 21), up.Data[0].On.Time)
	require.False(t, up.Data[0].Automatic, "past stop_after_level: by hand only")
}

// Done when: bad settings are each a 422 naming the field, and nothing
// is written; only an admin sets them, and that is audited.
func TestBadSettingsWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	base := b.settings(t)
	require.False(t, base.Automatic, "off until an admin turns them on")
	require.Len(t, base.Levels, 3)
	with := func(change func(in map[string]any, levels []map[string]any)) map[string]any {
		in := input(base)
		change(in, in["levels"].([]map[string]any))
		return in
	}
	w := base.Levels[0].Wording
	for _, tc := range []struct {
		name   string
		token  string
		body   any
		status int
		field  string
	}{
		{"negative days", b.admin, with(func(_ map[string]any, l []map[string]any) { l[0]["days_past_due"] = -3 }), 422, "levels[0].days_past_due"},
		{"zero days", b.admin, with(func(_ map[string]any, l []map[string]any) { l[0]["days_past_due"] = 0 }), 422, "levels[0].days_past_due"},
		{"days not rising", b.admin, with(func(_ map[string]any, l []map[string]any) { l[2]["days_past_due"] = 21 }), 422, "levels[2].days_past_due"},
		{"no days", b.admin, with(func(_ map[string]any, l []map[string]any) { delete(l[1], "days_past_due") }), 422, "levels[1].days_past_due"},
		{"unknown language", b.admin, with(func(_ map[string]any, l []map[string]any) {
			l[0]["wording"] = map[string]any{"en": w["en"], "de": w["de"], "fr": w["fr"], "es": w["en"]}
		}), 422, "levels[0].wording.es"},
		{"a language missing", b.admin, with(func(_ map[string]any, l []map[string]any) {
			l[1]["wording"] = map[string]any{"en": w["en"], "fr": w["fr"]}
		}), 422, "levels[1].wording.de"},
		{"a template naming what a reminder has not", b.admin, with(func(_ map[string]any, l []map[string]any) {
			l[0]["wording"] = map[string]any{"en": map[string]any{"subject": "{{.Password}}", "body": "x"}, "de": w["de"], "fr": w["fr"]}
		}), 422, "levels[0].wording.en.subject"},
		{"a broken template", b.admin, with(func(_ map[string]any, l []map[string]any) {
			l[0]["wording"] = map[string]any{"en": w["en"], "de": map[string]any{"subject": "x", "body": "{{.Number"}, "fr": w["fr"]}
		}), 422, "levels[0].wording.de.body"},
		{"an empty body", b.admin, with(func(_ map[string]any, l []map[string]any) {
			l[0]["wording"] = map[string]any{"en": w["en"], "de": w["de"], "fr": map[string]any{"subject": "x", "body": " "}}
		}), 422, "levels[0].wording.fr.body"},
		{"no levels", b.admin, with(func(in map[string]any, _ []map[string]any) { in["levels"] = []any{} }), 422, "levels"},
		{"stop after no level", b.admin, with(func(in map[string]any, _ []map[string]any) { in["stop_after_level"] = 4 }), 422, "stop_after_level"},
		{"unknown member", b.admin, with(func(in map[string]any, _ []map[string]any) { in["enabled"] = true }), 422, "enabled"},
		{"a clerk", b.clerk, with(func(in map[string]any, _ []map[string]any) { in["automatic"] = true }), 403, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			audits := b.count(t, `SELECT count(*) FROM audit_events`)
			r := b.h.Do(t, http.MethodPut, "/v1/reminders/settings", tc.token, tc.body)
			require.Equal(t, tc.status, r.StatusCode, "%s", r.Body)
			if tc.field != "" {
				p := r.Problem(t)
				fields := []string{}
				for _, e := range p["errors"].([]any) {
					fields = append(fields, e.(map[string]any)["field"].(string))
				}
				require.Equal(t, []string{tc.field}, fields, "%s", r.Body)
			}
			require.Equal(t, base, b.settings(t))
			require.Equal(t, audits, b.count(t, `SELECT count(*) FROM audit_events`))
		})
	}

	// A stale If-Match is 412; a good change is audited with before and
	// after; setting it again changes nothing.
	in := with(func(in map[string]any, l []map[string]any) { in["automatic"] = true; l[0]["days_past_due"] = 5 })
	r := b.h.Do(t, http.MethodPut, "/v1/reminders/settings", b.admin, in, "If-Match", `"7"`)
	require.Equal(t, http.StatusPreconditionFailed, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPut, "/v1/reminders/settings", b.admin, in, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var s reminders.Settings
	r.JSON(t, &s)
	require.True(t, s.Automatic)
	require.Equal(t, int64(2), s.Version)
	require.Equal(t, 5, s.Levels[0].DaysPastDue)
	r = b.h.Do(t, http.MethodPut, "/v1/reminders/settings", b.admin, in)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'reminders.settings_changed'
		AND event->'data'->'after'->>'automatic' = 'true' AND event->'data'->'before'->>'automatic' = 'false'`))
}

// subscribe adds a webhook endpoint for invoice.reminder_sent; its host
// never resolves, so the deliveries stay, readable.
func subscribe(t *testing.T, b *bundle) {
	_, err := b.h.Pool.Exec(b.ctx, `INSERT INTO webhook_endpoints (id, url, events, secret, created_by, created_at, updated_at)
		SELECT gen_random_uuid(), 'https://receiver.invalid/hook', $1, 'whsec_dGVzdA==', id, now(), now()
		FROM users WHERE username = 'clerk'`, []string{string(events.InvoiceReminderSent)})
	require.NoError(t, err)
}
