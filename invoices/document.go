package invoices

import (
	"net/http"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/problem"
)

// CodeSellerNotConfigured is the 503 problem code of a document asked for
// while the seller settings are unset: a document that does not say who
// issued it is no invoice.
const CodeSellerNotConfigured = "SELLER_NOT_CONFIGURED"

// SellerSettingsHint names the settings a document needs.
const SellerSettingsHint = "documents need the seller's details: set INVOICED_SELLER_NAME (and INVOICED_SELLER_ADDRESS, INVOICED_SELLER_TAX_ID) and restart"

// RequireSeller is nil when seller can issue documents, the 503 naming the
// settings otherwise.
func RequireSeller(seller document.Party) error {
	if seller.Name == "" {
		return problem.New(http.StatusServiceUnavailable, CodeSellerNotConfigured, SellerSettingsHint)
	}
	return nil
}

// Document is inv as its PDF shows it, issued by seller. An issued
// invoice bills whom it billed when it was issued (its bill_to); a draft
// bills customer as they are now, is marked DRAFT and shows what it will
// be once issued; a void invoice is marked VOID and owes nothing. A paid
// invoice was paid in full on its paid_at date.
func Document(inv *Invoice, customer *Customer, seller document.Party) *document.Document {
	d := &document.Document{
		Kind: document.KindInvoice, ID: inv.ID.String(), Currency: inv.Currency, Seller: seller, Memo: inv.Memo,
		Subtotal: inv.Subtotal, TaxTotal: inv.TaxTotal, Total: inv.Total,
		Created: inv.CreatedAt, Modified: inv.UpdatedAt,
	}
	if inv.Number != nil {
		d.Number = *inv.Number
	}
	if inv.IssuedAt != nil {
		d.IssueDate, d.Created = civil(*inv.IssuedAt), *inv.IssuedAt
	}
	if inv.DueDate != nil {
		d.DueDate = inv.DueDate.Time
	}
	switch {
	case inv.BillTo != nil:
		d.BillTo = document.Party{Name: inv.BillTo.Name, Email: inv.BillTo.Email}
	case customer != nil:
		d.BillTo = document.Party{Name: customer.Name, Email: customer.Email}
	}
	d.Lines = make([]document.Line, len(inv.Lines))
	for i, l := range inv.Lines {
		d.Lines[i] = document.Line(l)
	}
	balance := inv.Total
	switch inv.Status {
	case StatusDraft:
		d.Mark, d.MarkNote = document.MarkDraft, "a preview as it will be issued; the number and issue date are assigned on issue."
	case StatusVoid:
		d.Mark, d.MarkNote = document.MarkVoid, "this invoice was voided and is not to be paid."
	case StatusPaid:
		d.Payments = []document.Payment{{Date: civil(*inv.PaidAt), Label: "Paid in full", Amount: inv.Total}}
		balance = 0
	}
	if inv.Status != StatusVoid {
		d.Balance = &balance
	}
	return d
}

// civil is t's calendar date in UTC, the zone the service dates invoices in.
func civil(t time.Time) time.Time {
	y, m, day := t.UTC().Date()
	return time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}
