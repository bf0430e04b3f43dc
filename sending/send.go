package sending

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/mail"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Format is a document a sending carries: the PDF, the Factur-X PDF (the
// PDF with its CII inside), or an e-invoice format's XML (a customer's
// einvoice_format: ubl, cii, xrechnung-ubl, xrechnung-cii, peppol).
type Format string

// The formats this package renders itself or names.
const (
	FormatPDF     Format = "pdf"
	FormatFacturX        = Format(einvoice.FacturX)
)

// formatsFor are the documents a customer whose e-invoice format is f
// receives: the PDF alone without one; the Factur-X PDF, which is both,
// for facturx; else the PDF and the XML.
func formatsFor(f Format) []Format {
	switch f {
	case "", Format(einvoice.None):
		return []Format{FormatPDF}
	case FormatFacturX:
		return []Format{FormatFacturX}
	}
	return []Format{FormatPDF, f}
}

type sendInput struct {
	InvoiceID    uuid.UUID `json:"invoice_id"`
	CreditNoteID uuid.UUID `json:"credit_note_id"`
	To           string    `json:"to"`
}

// draft is a sending before it is recorded: the rendered mail and
// documents, and the invoice whose status the transaction checks again.
type draft struct {
	sending   *Sending
	invoiceID uuid.UUID
}

// Actor is whom a sending is recorded and audited as: a user calling a
// capability, or the service itself (an automatic reminder).
type Actor struct {
	UserID   *uuid.UUID
	Username string
	Via      capability.Path
}

// ActorOf is the caller of call.
func ActorOf(call capability.Call) Actor {
	id := call.Principal.UserID
	return Actor{UserID: &id, Username: call.Principal.Username, Via: call.Via}
}

// System is the service sending on its own: the automatic reminders.
var System = Actor{Username: "system", Via: capability.PathSystem}

// Writer writes a mail's subject and text for the document it carries,
// in the document's language; nil is the standard letter (message).
type Writer func(d *document.Document) (subject, text string, err error)

// SendInvoice is the send-invoice capability (bound): an issued or paid
// invoice, mailed to in.To or else its customer's address.
func (s *Service) SendInvoice(ctx context.Context, call capability.Call) (any, error) {
	in, err := s.start(call)
	if err != nil {
		return nil, err
	}
	dr, err := s.invoiceDraft(ctx, ActorOf(call), in.InvoiceID, in.To, nil)
	if err != nil {
		return nil, err
	}
	return result(s.record(ctx, ActorOf(call), dr))
}

// invoiceDraft renders the mail of issued or paid invoice id to to (or
// its customer's address), written by write.
func (s *Service) invoiceDraft(ctx context.Context, by Actor, id uuid.UUID, to string, write Writer) (*draft, error) {
	d, inv, err := invoices.InvoiceDocument(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	if _, err := invoices.Transition(inv.Status, invoices.ActionSend); err != nil {
		return nil, err
	}
	var format Format
	if inv.BillTo != nil {
		format = Format(inv.BillTo.EInvoiceFormat)
	}
	dr, err := s.prepare(ctx, by, to, d, inv.CustomerID, format, write, func(f Format) (mail.Attachment, error) {
		if f == FormatPDF {
			return pdf(d)
		}
		e, _, err := invoices.InvoiceEInvoice(ctx, s.db, inv.ID)
		if err != nil {
			return mail.Attachment{}, err
		}
		return einvoiceFile(e, f)
	})
	if err != nil {
		return nil, err
	}
	dr.sending.InvoiceID, dr.invoiceID = &inv.ID, inv.ID
	return dr, nil
}

// Reminder is a reminder of an overdue invoice: its level, whom it is
// sent as, and what its mail says.
type Reminder struct {
	InvoiceID uuid.UUID
	Level     int
	By        Actor
	Write     Writer
}

// PreparedReminder is a reminder rendered (mail and documents), ready to
// be recorded.
type PreparedReminder struct {
	dr *draft
	by Actor
}

// PrepareReminder renders r outside any transaction: the documents the
// customer's e-invoice format asks for, to the customer's address, as
// send-invoice would, with r's wording. The caller checks whether the
// invoice may be reminded of (issued, owing, not disputed).
func (s *Service) PrepareReminder(ctx context.Context, r Reminder) (*PreparedReminder, error) {
	if err := s.requireMail(); err != nil {
		return nil, err
	}
	dr, err := s.invoiceDraft(ctx, r.By, r.InvoiceID, "", r.Write)
	if err != nil {
		return nil, err
	}
	level := r.Level
	dr.sending.ReminderLevel = &level
	return &PreparedReminder{dr: dr, by: r.By}, nil
}

// RecordReminderTx records p in tx, with its documents, its mail job and
// invoice.reminder_sent in the audit chain; false, with nothing written,
// when the invoice had a reminder of that level already. The caller holds
// the invoice and has checked it again in tx.
func (s *Service) RecordReminderTx(ctx context.Context, tx pgx.Tx, p *PreparedReminder) (*Sending, bool, error) {
	return s.recordTx(ctx, tx, p.by, p.dr)
}

// SendCreditNote is the send-credit-note capability (bound): a credit
// note, mailed to in.To or else its invoice's customer's address. A
// credit note of a voided invoice cannot be: an invoice with credit notes
// is never voided.
func (s *Service) SendCreditNote(ctx context.Context, call capability.Call) (any, error) {
	in, err := s.start(call)
	if err != nil {
		return nil, err
	}
	cn, err := invoices.CreditNoteGetByID(ctx, s.db, in.CreditNoteID)
	if err != nil {
		return nil, err
	}
	var current *invoices.Seller
	if cn.Seller == nil {
		if current, err = invoices.CurrentSeller(ctx, s.db); err != nil {
			return nil, err
		}
	}
	d := invoices.CreditNoteDocument(cn, current)
	inv, err := invoices.InvoiceGetByID(ctx, s.db, cn.InvoiceID)
	if err != nil {
		return nil, err
	}
	dr, err := s.prepare(ctx, ActorOf(call), in.To, d, inv.CustomerID, Format(cn.BillTo.EInvoiceFormat), nil, func(f Format) (mail.Attachment, error) {
		if f == FormatPDF {
			return pdf(d)
		}
		e, err := invoices.CreditNoteEInvoice(cn, current)
		if err != nil {
			return mail.Attachment{}, err
		}
		return einvoiceFile(e, f)
	})
	if err != nil {
		return nil, err
	}
	dr.sending.CreditNoteID = &cn.ID
	return result(s.record(ctx, ActorOf(call), dr))
}

// start checks who calls and that this server can send, and reads the input.
func (s *Service) start(call capability.Call) (sendInput, error) {
	var in sendInput
	if err := invoices.RequireWriter(call.Principal); err != nil {
		return in, err
	}
	if err := s.requireMail(); err != nil {
		return in, err
	}
	return in, decode(call, &in)
}

// prepare finds the recipient and the documents format (the customer's
// as the document was issued) asks for, and renders them and the mail
// (written by write), outside any transaction.
func (s *Service) prepare(ctx context.Context, by Actor, to string, d *document.Document, customerID uuid.UUID,
	format Format, write Writer, render func(Format) (mail.Attachment, error)) (*draft, error) {
	if err := invoices.RequireSeller(d.Seller); err != nil {
		return nil, err
	}
	c, err := invoices.CustomerGetByID(ctx, s.db, customerID)
	if err != nil {
		return nil, err
	}
	if to == "" {
		to = c.Email
	}
	if to == "" {
		return nil, problem.Invalid("to", "the customer %s has no email address: give one here, or set theirs (update-customer)", c.Name)
	}
	id := uuid.Must(uuid.NewV7())
	sn := &Sending{ID: id, Number: d.Number, To: to, MessageID: id.String() + "@" + s.sender.Domain(),
		Status: StatusQueued, RequestedBy: by.UserID, replyTo: d.Seller.Contact.Email}
	for _, f := range formatsFor(format) {
		a, err := render(f)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(a.Data)
		sn.Documents = append(sn.Documents, Document{Format: f, Filename: a.Name, ContentType: a.ContentType,
			Size: len(a.Data), SHA256: hex.EncodeToString(sum[:]), content: a.Data})
	}
	if sn.Subject, sn.text, sn.html, err = message(d, write); err != nil {
		return nil, err
	}
	return &draft{sending: sn}, nil
}

// einvoiceFile writes e in the e-invoice format f: an XML, or the
// Factur-X PDF.
func einvoiceFile(e einvoice.Invoice, f Format) (mail.Attachment, error) {
	ef := einvoice.Format(f)
	b, err := einvoice.Generate(e, ef)
	if err != nil {
		return mail.Attachment{}, err
	}
	return mail.Attachment{Name: einvoice.FileName(e.Number, ef), ContentType: ef.ContentType(), Data: b}, nil
}

// pdf renders d as the PDF the routes serve.
func pdf(d *document.Document) (mail.Attachment, error) {
	b, err := document.Render(d)
	if err != nil {
		return mail.Attachment{}, err
	}
	return mail.Attachment{Name: d.FileName(), ContentType: "application/pdf", Data: b}, nil
}

// record writes the sending, its documents and its audit event and
// enqueues its mail, in one transaction. An invoice is held (FOR SHARE)
// and checked again: one voided since it was read is not sent, and
// sendings of one invoice do not wait on each other.
func (s *Service) record(ctx context.Context, by Actor, dr *draft) (*Sending, error) {
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Sending, error) {
		if dr.sending.InvoiceID != nil {
			st, err := invoiceStatusShareTx(ctx, tx, dr.invoiceID)
			if err != nil {
				return nil, err
			}
			if _, err := invoices.Transition(st, invoices.ActionSend); err != nil {
				return nil, err
			}
		}
		sn, _, err := s.recordTx(ctx, tx, by, dr)
		return sn, err
	})
}

// recordTx writes the sending, its documents, its mail job and its audit
// event in tx; false when it is a reminder of a level sent already.
func (s *Service) recordTx(ctx context.Context, tx pgx.Tx, by Actor, dr *draft) (*Sending, bool, error) {
	sn := *dr.sending
	sn.RequestedAt = s.clock()
	if ok, err := SendingInsertTx(ctx, tx, &sn); err != nil || !ok {
		return nil, false, err
	}
	if err := s.jobs.InsertTx(ctx, tx, sendArgs{SendingID: sn.ID}, nil); err != nil {
		return nil, false, err
	}
	typ, id := sn.subject()
	docs := make([]map[string]any, len(sn.Documents))
	for i, d := range sn.Documents {
		docs[i] = map[string]any{"format": d.Format, "filename": d.Filename, "sha256": d.SHA256}
	}
	data := map[string]any{"sending_id": sn.ID, "number": sn.Number, "to": sn.To, "documents": docs, "message_id": sn.MessageID}
	event := typ + ".sent"
	if sn.ReminderLevel != nil {
		event, data["level"] = string(events.InvoiceReminderSent), *sn.ReminderLevel
	}
	// Last: the audit chain's lock is held until commit.
	return &sn, true, auditTx(ctx, tx, by, event, typ, id, data)
}
