package sending_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/mail/mailtest"
	"github.com/invoiced/invoiced/notify"
	"github.com/invoiced/invoiced/sending"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

const mailFrom = "Nordlicht Billing <invoices@nordlicht.example>"

type bundle struct {
	ctx      context.Context
	h        *apptest.Harness
	smtp     *mailtest.Server
	clerk    string
	approver string
	customer *invoices.Customer
}

// setup runs the service with mail through a real SMTP server (mailtest),
// a clerk and an approver, and a customer with an address; smtp false
// leaves INVOICED_SMTP_URL unset.
func setup(t *testing.T, smtp bool) *bundle {
	t.Helper()
	b := &bundle{ctx: context.Background()}
	var cfg app.Config
	if smtp {
		b.smtp = mailtest.Start(t)
		cfg.Notify = notify.Config{Sender: b.smtp.Sender(t, mailFrom), PublicURL: "https://invoices.example.com"}
	}
	b.h = apptest.New(t, apptest.Options{Config: cfg})
	_, b.clerk = b.h.User(t, "clerk", identity.RoleClerk)
	_, b.approver = b.h.User(t, "approver", identity.RoleApprover)
	b.customer = invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Acme & Söhne <AG>"})
	return b
}

func (b *bundle) issued(t *testing.T) *invoices.Invoice {
	t.Helper()
	return invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
}

func (b *bundle) send(t *testing.T, path string, body any) (*apptest.Response, sending.Sending) {
	t.Helper()
	r := b.h.Do(t, http.MethodPost, path, b.clerk, body)
	var sn sending.Sending
	if r.StatusCode == http.StatusAccepted {
		r.JSON(t, &sn)
	}
	return r, sn
}

func (b *bundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, q, args...).Scan(&n))
	return n
}

// written counts what a sending writes: sendings, their documents, mail
// jobs and audit events.
func (b *bundle) written(t *testing.T) [4]int {
	t.Helper()
	return [4]int{
		b.count(t, `SELECT count(*) FROM sendings`),
		b.count(t, `SELECT count(*) FROM sending_documents`),
		b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'sending.send'`),
		b.count(t, `SELECT count(*) FROM audit_events WHERE type IN ('invoice.sent', 'credit_note.sent')`),
	}
}

// waitSent waits until the sending is recorded sent and returns it as
// the list shows it.
func (b *bundle) waitSent(t *testing.T, list string, id string) sending.Sending {
	t.Helper()
	var found sending.Sending
	require.Eventually(t, func() bool {
		r := b.h.Do(t, http.MethodGet, list, b.clerk, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		var page struct{ Data []sending.Sending }
		r.JSON(t, &page)
		for _, sn := range page.Data {
			if sn.ID.String() == id && sn.Status == sending.StatusSent {
				found = sn
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	return found
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Done when: an issued invoice is mailed to its customer through a real
// SMTP server with its PDF (the bytes GET …/pdf serves), from the
// configured address with the seller's contact as Reply-To; the sending is
// recorded (when, to whom, which documents, the Message-ID), audited, and
// invoice.sent follows once the server took it.
func TestSendInvoiceMailsThePDFAndRecordsTheSending(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	subscribe(t, b)
	inv := b.issued(t)
	r, sn := b.send(t, "/v1/invoices/"+inv.ID.String()+"/send", nil)
	require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
	require.Equal(t, sending.StatusQueued, sn.Status)
	require.Equal(t, "billing@example.com", sn.To)
	require.Equal(t, *inv.Number, sn.Number)
	require.Equal(t, inv.ID, *sn.InvoiceID)
	require.Nil(t, sn.CreditNoteID)

	msgs := b.smtp.Wait(t, 1, 20*time.Second)
	m := msgs[0]
	require.Equal(t, []string{"billing@example.com"}, m.To)
	require.Equal(t, "invoices@nordlicht.example", m.From)
	require.Equal(t, sn.MessageID, m.MessageID)
	require.Equal(t, "Invoice "+*inv.Number+" from Nordlicht Consulting GmbH", m.Subject)
	require.Equal(t, "<billing@nordlicht.example>", m.Header.Get("Reply-To"))
	require.Contains(t, m.Text, "our invoice "+*inv.Number)
	require.Contains(t, m.Text, "120.00")
	require.Contains(t, m.HTML, *inv.Number)

	pdf := b.h.Do(t, http.MethodGet, "/v1/invoices/"+inv.ID.String()+"/pdf", b.clerk, nil)
	require.Equal(t, http.StatusOK, pdf.StatusCode)
	require.Len(t, m.Attachments, 1)
	require.Equal(t, *inv.Number+".pdf", m.Attachments[0].Name)
	require.Equal(t, "application/pdf", m.Attachments[0].ContentType)
	require.Equal(t, pdf.Body, m.Attachments[0].Data, "the PDF the API serves")

	got := b.waitSent(t, "/v1/invoices/"+inv.ID.String()+"/sendings", sn.ID.String())
	require.NotNil(t, got.SentAt)
	require.Equal(t, []sending.Document{{Format: sending.FormatPDF, Filename: *inv.Number + ".pdf", ContentType: "application/pdf",
		Size: len(pdf.Body), SHA256: digest(pdf.Body)}}, got.Documents)

	var data map[string]any
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT event->'data' FROM audit_events WHERE type = 'invoice.sent' AND event->>'subject_id' = $1`,
		inv.ID.String()).Scan(&data))
	require.Equal(t, sn.ID.String(), data["sending_id"])
	require.Equal(t, "billing@example.com", data["to"])
	require.Equal(t, sn.MessageID, data["message_id"])

	require.Eventually(t, func() bool { return len(deliveries(t, b, events.InvoiceSent)) == 1 }, 10*time.Second, 50*time.Millisecond)
	ev := deliveries(t, b, events.InvoiceSent)[0]
	require.Equal(t, sn.ID, ev.ID)
	require.Equal(t, sending.StatusSent, ev.Status)
	require.Equal(t, got.Documents, ev.Documents)
}

// Done when: the mail holds the documents the customer's e-invoice format
// (as the invoice was issued) asks for: the PDF alone; the Factur-X PDF;
// or the PDF and the XML, each the bytes the API serves.
func TestSendAttachesWhatTheFormatAsks(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	type want struct{ name, contentType, path string }
	cases := map[string][]want{
		"none":          {{".pdf", "application/pdf", "/pdf"}},
		"facturx":       {{".pdf", "application/pdf", "/einvoice?format=facturx"}},
		"ubl":           {{".pdf", "application/pdf", "/pdf"}, {".ubl.xml", "application/xml", "/einvoice?format=ubl"}},
		"cii":           {{".pdf", "application/pdf", "/pdf"}, {".cii.xml", "application/xml", "/einvoice?format=cii"}},
		"xrechnung-ubl": {{".pdf", "application/pdf", "/pdf"}, {".xrechnung-ubl.xml", "application/xml", "/einvoice?format=xrechnung-ubl"}},
		"xrechnung-cii": {{".pdf", "application/pdf", "/pdf"}, {".xrechnung-cii.xml", "application/xml", "/einvoice?format=xrechnung-cii"}},
		"peppol":        {{".pdf", "application/pdf", "/pdf"}, {".peppol.xml", "application/xml", "/einvoice?format=peppol"}},
	}
	sent := map[string]*invoices.Invoice{}
	byMessage := map[string]string{}
	for format := range cases {
		c := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Customer " + format})
		_, err := b.h.Pool.Exec(b.ctx, `UPDATE customers SET einvoice_format = $2, buyer_reference = '04011000-12345-67' WHERE id = $1`, c.ID, format)
		require.NoError(t, err)
		inv := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &c.ID})
		r, sn := b.send(t, "/v1/invoices/"+inv.ID.String()+"/send", nil)
		require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
		sent[format], byMessage[sn.MessageID] = inv, format
	}
	for _, m := range b.smtp.Wait(t, len(cases), 30*time.Second) {
		format := byMessage[m.MessageID]
		inv := sent[format]
		require.Len(t, m.Attachments, len(cases[format]), format)
		for i, w := range cases[format] {
			a := m.Attachments[i]
			require.Equal(t, *inv.Number+w.name, a.Name, format)
			require.Equal(t, w.contentType, a.ContentType, format)
			r := b.h.Do(t, http.MethodGet, "/v1/invoices/"+inv.ID.String()+w.path, b.clerk, nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s: %s", format, r.Body)
			require.Equal(t, r.Body, a.Data, "%s: %s is what %s serves", format, a.Name, w.path)
		}
	}
}

// A credit note goes to its invoice's customer, to another address when
// the input names one; credit_note.sent follows.
func TestSendCreditNote(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	subscribe(t, b)
	inv := b.issued(t)
	cn := creditNote(t, b, inv)
	r, sn := b.send(t, "/v1/credit-notes/"+cn.String()+"/send", map[string]any{"to": "ap@acme.example"})
	require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
	require.Equal(t, cn, *sn.CreditNoteID)
	m := b.smtp.Wait(t, 1, 20*time.Second)[0]
	require.Equal(t, []string{"ap@acme.example"}, m.To)
	require.Equal(t, "Credit note "+sn.Number+" from Nordlicht Consulting GmbH", m.Subject)
	require.Contains(t, m.Text, "which corrects invoice "+*inv.Number)
	require.Len(t, m.Attachments, 1)
	require.Equal(t, sn.Number+".pdf", m.Attachments[0].Name)
	pdf := b.h.Do(t, http.MethodGet, "/v1/credit-notes/"+cn.String()+"/pdf", b.clerk, nil)
	require.Equal(t, pdf.Body, m.Attachments[0].Data)
	b.waitSent(t, "/v1/credit-notes/"+cn.String()+"/sendings", sn.ID.String())
	require.Eventually(t, func() bool { return len(deliveries(t, b, events.CreditNoteSent)) == 1 }, 10*time.Second, 50*time.Millisecond)
}

// A customer whose documents are German gets a German mail.
func TestMailInTheCustomersLanguage(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	_, err := b.h.Pool.Exec(b.ctx, `UPDATE customers SET language = 'de' WHERE id = $1`, b.customer.ID)
	require.NoError(t, err)
	inv := b.issued(t)
	r, _ := b.send(t, "/v1/invoices/"+inv.ID.String()+"/send", nil)
	require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
	m := b.smtp.Wait(t, 1, 20*time.Second)[0]
	require.Equal(t, "Rechnung "+*inv.Number+" von Nordlicht Consulting GmbH", m.Subject)
	require.Contains(t, m.Text, "anbei erhalten Sie unsere Rechnung")
	require.Contains(t, m.Text, document.German.Money(inv.Total, "EUR"))
}

// Done when: each refusal is a clear problem naming the field, and writes
// nothing: no address, a draft, a void invoice, a bad address, an unknown
// invoice, an approver's call.
func TestSendRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	issued := b.issued(t)
	draft := invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &b.customer.ID})
	void := b.issued(t)
	approveVoid(t, b, void)
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+void.ID.String()+"/void", b.clerk, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	noMail := invoicetest.Customer(b.ctx, t, b.h.Pool, invoicetest.CustomerOpts{Name: "Silent Ltd"})
	_, err := b.h.Pool.Exec(b.ctx, `UPDATE customers SET email = '' WHERE id = $1`, noMail.ID)
	require.NoError(t, err)
	unreachable := invoicetest.Issued(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &noMail.ID})

	for _, tc := range []struct {
		name, path, token string
		body              any
		status            int
		code, field       string
	}{
		{"no address", "/v1/invoices/" + unreachable.ID.String() + "/send", b.clerk, nil, 422, "VALIDATION_FAILED", "to"},
		{"bad address", "/v1/invoices/" + issued.ID.String() + "/send", b.clerk, map[string]any{"to": "not an address"}, 422, "VALIDATION_FAILED", "to"},
		{"unknown member", "/v1/invoices/" + issued.ID.String() + "/send", b.clerk, map[string]any{"cc": "x@example.com"}, 422, "VALIDATION_FAILED", "cc"},
		{"draft", "/v1/invoices/" + draft.ID.String() + "/send", b.clerk, nil, 409, "INVALID_TRANSITION", ""},
		{"void", "/v1/invoices/" + void.ID.String() + "/send", b.clerk, nil, 409, "INVALID_TRANSITION", ""},
		{"unknown invoice", "/v1/invoices/0190a0b0-0000-7000-8000-000000000000/send", b.clerk, nil, 404, "NOT_FOUND", ""},
		{"unknown credit note", "/v1/credit-notes/0190a0b0-0000-7000-8000-000000000000/send", b.clerk, nil, 404, "NOT_FOUND", ""},
		{"approver", "/v1/invoices/" + issued.ID.String() + "/send", b.approver, nil, 403, "FORBIDDEN", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.written(t)
			r := b.h.Do(t, http.MethodPost, tc.path, tc.token, tc.body)
			require.Equal(t, tc.status, r.StatusCode, "%s", r.Body)
			p := r.Problem(t)
			require.Equal(t, tc.code, p["code"], "%s", r.Body)
			if tc.field != "" {
				require.Equal(t, tc.field, p["errors"].([]any)[0].(map[string]any)["field"], "%s", r.Body)
			}
			if tc.name == "void" {
				require.Contains(t, p["detail"], "the invoice is void")
			}
			require.Equal(t, before, b.written(t))
		})
	}
	require.Empty(t, b.smtp.Messages())
}

// Done when: a server without INVOICED_SMTP_URL refuses with a 503 that
// names the setting, writing nothing, on every path.
func TestNoSMTPIs503(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	inv := b.issued(t)
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+inv.ID.String()+"/send", b.clerk, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "%s", r.Body)
	p := r.Problem(t)
	require.Equal(t, sending.CodeMailNotConfigured, p["code"])
	require.Contains(t, p["detail"], "INVOICED_SMTP_URL")
	r = b.h.Do(t, http.MethodPost, "/v1/capabilities/send-invoice/invoke", b.clerk, map[string]any{"input": map[string]any{"invoice_id": inv.ID}})
	require.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "%s", r.Body)
	require.Equal(t, [4]int{}, b.written(t))
}

// Done when: sends of one invoice at once each record their sending and
// mail it: none lost, none twice.
func TestConcurrentSendsEachRecordedAndMailed(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	inv := b.issued(t)
	const n = 8
	var wg sync.WaitGroup
	ids := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, sn := b.send(t, "/v1/invoices/"+inv.ID.String()+"/send", nil)
			if r.StatusCode == http.StatusAccepted {
				ids <- sn.MessageID
			}
		}()
	}
	wg.Wait()
	close(ids)
	want := map[string]bool{}
	for id := range ids {
		want[id] = true
	}
	require.Len(t, want, n, "every send answered with its own sending")
	require.Equal(t, n, b.count(t, `SELECT count(*) FROM sendings WHERE invoice_id = $1`, inv.ID))
	msgs := b.smtp.Wait(t, n, 30*time.Second)
	got := map[string]bool{}
	for _, m := range msgs {
		got[m.MessageID] = true
	}
	require.Equal(t, want, got)
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM sendings WHERE invoice_id = $1 AND sent_at IS NOT NULL`, inv.ID) == n
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, n, b.count(t, `SELECT count(*) FROM audit_events WHERE type = 'invoice.sent'`))
}

// A void that races sends: every send that was recorded went out while
// the invoice was still issued, and none is recorded after the void.
func TestSendAndVoidRace(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	inv := b.issued(t)
	approveVoid(t, b, inv)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := b.send(t, "/v1/invoices/"+inv.ID.String()+"/send", nil)
			require.Contains(t, []int{http.StatusAccepted, http.StatusConflict}, r.StatusCode, "%s", r.Body)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+inv.ID.String()+"/void", b.clerk, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	}()
	wg.Wait()
	require.Zero(t, b.count(t, `SELECT count(*) FROM sendings s JOIN invoices i ON i.id = s.invoice_id WHERE s.requested_at > i.voided_at`))
}

// subscribe adds a webhook endpoint for the sent events; its host never
// resolves, so the deliveries stay, readable.
func subscribe(t *testing.T, b *bundle) {
	t.Helper()
	_, err := b.h.Pool.Exec(b.ctx, `INSERT INTO webhook_endpoints (id, url, events, secret, created_by, created_at, updated_at)
		SELECT gen_random_uuid(), 'https://receiver.invalid/hook', $1, 'whsec_dGVzdA==', id, now(), now()
		FROM users WHERE username = 'clerk'`,
		[]string{string(events.InvoiceSent), string(events.CreditNoteSent)})
	require.NoError(t, err)
}

// deliveries are the sendings the webhook deliveries of type typ carry.
func deliveries(t *testing.T, b *bundle, typ events.Type) []sending.Sending {
	t.Helper()
	rows, err := b.h.Pool.Query(b.ctx, `SELECT payload FROM webhook_deliveries WHERE event_type = $1 ORDER BY event_id`, string(typ))
	require.NoError(t, err)
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var out []sending.Sending
	for _, p := range payloads {
		var env struct {
			Type events.Type     `json:"type"`
			Data sending.Sending `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(p), &env))
		require.Equal(t, typ, env.Type)
		out = append(out, env.Data)
	}
	return out
}

// approveVoid has the clerk ask to void inv and the approver approve it
// (a void is consequential, ADR-0022): the clerk's next void takes effect.
func approveVoid(t *testing.T, b *bundle, inv *invoices.Invoice) {
	t.Helper()
	r := b.h.Do(t, http.MethodPost, "/v1/invoices/"+inv.ID.String()+"/void", b.clerk, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+r.Problem(t)["approval_id"].(string)+"/approve", b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
}

// creditNote credits 10.00 of inv through the API, approved by the
// approver, and returns the credit note's id.
func creditNote(t *testing.T, b *bundle, inv *invoices.Invoice) uuid.UUID {
	t.Helper()
	path := "/v1/invoices/" + inv.ID.String() + "/credit-notes"
	body := map[string]any{"reason": "Discount", "amount": 1000}
	r := b.h.Do(t, http.MethodPost, path, b.clerk, body)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+r.Problem(t)["approval_id"].(string)+"/approve", b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = b.h.Do(t, http.MethodPost, path, b.clerk, body)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var cn invoices.CreditNote
	r.JSON(t, &cn)
	return cn.ID
}

// With the mail server down the sending waits, queued, and no event is
// emitted; once it is back the mail goes out once and the sending is sent.
func TestMailServerDownThenUpSendsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	inv := b.issued(t)
	b.smtp.Down()
	r, sn := b.send(t, "/v1/invoices/"+inv.ID.String()+"/send", nil)
	require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'sending.send' AND attempt >= 1 AND state IN ('retryable', 'available', 'scheduled')`) == 1
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM sendings WHERE sent_at IS NULL AND failed_at IS NULL`))
	b.smtp.Up(t)
	b.waitSent(t, "/v1/invoices/"+inv.ID.String()+"/sendings", sn.ID.String())
	time.Sleep(300 * time.Millisecond)
	msgs := b.smtp.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, sn.MessageID, msgs[0].MessageID)
}

// A send retried with its Idempotency-Key is the one sending it made.
func TestIdempotentResendIsOneSending(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	inv := b.issued(t)
	path := "/v1/invoices/" + inv.ID.String() + "/send"
	first := b.h.Do(t, http.MethodPost, path, b.clerk, nil, "Idempotency-Key", "send-once-1")
	require.Equal(t, http.StatusAccepted, first.StatusCode, "%s", first.Body)
	again := b.h.Do(t, http.MethodPost, path, b.clerk, nil, "Idempotency-Key", "send-once-1")
	require.Equal(t, http.StatusAccepted, again.StatusCode, "%s", again.Body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(again.Body))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM sendings`))
	resend := b.h.Do(t, http.MethodPost, path, b.clerk, nil, "Idempotency-Key", "send-once-2")
	require.Equal(t, http.StatusAccepted, resend.StatusCode, "%s", resend.Body)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM sendings`), "another key is a resend")
	b.smtp.Wait(t, 2, 20*time.Second)
}

// A mail whose retries give up leaves the sending failed, saying why,
// with no sent event.
func TestRetriesGivenUpLeaveTheSendingFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	subscribe(t, b)
	inv := b.issued(t)
	b.smtp.Down()
	r, sn := b.send(t, "/v1/invoices/"+inv.ID.String()+"/send", nil)
	require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'sending.send' AND attempt >= 1 AND state IN ('retryable', 'available', 'scheduled')`) == 1
	}, 20*time.Second, 50*time.Millisecond)
	// The next attempt is the last (15 would take a day and a half).
	_, err := b.h.Pool.Exec(b.ctx, `UPDATE river_job SET max_attempts = attempt + 1 WHERE kind = 'sending.send'`)
	require.NoError(t, err)
	var got sending.Sending
	require.Eventually(t, func() bool {
		r := b.h.Do(t, http.MethodGet, "/v1/invoices/"+inv.ID.String()+"/sendings", b.clerk, nil)
		var page struct{ Data []sending.Sending }
		r.JSON(t, &page)
		got = page.Data[0]
		return got.Status == sending.StatusFailed
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, sn.ID, got.ID)
	require.NotNil(t, got.FailedAt)
	require.Nil(t, got.SentAt)
	require.Contains(t, got.Error, "send to billing@example.com")
	require.NotContains(t, got.Error, "s3cret-smtp", "no SMTP password in the record")
	require.Empty(t, deliveries(t, b, events.InvoiceSent))
}
