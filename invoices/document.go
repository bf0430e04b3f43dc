package invoices

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
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

// Seller is who issues an invoice or credit note, frozen into it in its
// issuing transaction from the seller settings (INVOICED_SELLER_*): a
// legal document names its seller as at issue, whatever the settings say
// later.
type Seller struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	TaxID   string `json:"tax_id"`
}

// SellerOf is the seller the settings p name, nil while they name none.
func SellerOf(p document.Party) *Seller {
	if p.Name == "" {
		return nil
	}
	return &Seller{Name: p.Name, Address: p.Address, TaxID: p.TaxID}
}

// issuer is who a document says issued it: the seller frozen at issue,
// or current (the settings now) for a draft, and for a document issued
// before sellers were recorded or while none was configured.
func issuer(frozen *Seller, current document.Party) document.Party {
	if frozen == nil {
		return current
	}
	return document.Party{Name: frozen.Name, Address: frozen.Address, TaxID: frozen.TaxID}
}

// Settlement is what moved an issued invoice's balance: its payments
// (reversed ones included) and credit notes, oldest first.
type Settlement struct {
	Payments    []*Payment
	CreditNotes []*CreditNote
}

// Document is inv as its PDF shows it. An issued invoice names the seller
// and bills whom it billed when it was issued (its seller and bill_to); a
// draft is issued by seller (the settings now), bills customer as they
// are now, is marked DRAFT and shows what it will be once issued; a void invoice is marked VOID and owes nothing. Its
// payments (a reversed one twice: received, then taken back), what its
// credit notes took off and the balance due follow the totals.
func Document(inv *Invoice, customer *Customer, seller document.Party, set Settlement) *document.Document {
	d := &document.Document{
		Kind: document.KindInvoice, ID: inv.ID.String(), Currency: inv.Currency, Seller: issuer(inv.Seller, seller), Memo: inv.Memo,
		Subtotal: inv.Subtotal, TaxTotal: inv.TaxTotal, Total: inv.Total, Credited: inv.AmountCredited,
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
	if n := creditNumbers(set.CreditNotes); n != "" {
		d.Facts = append(d.Facts, document.Fact{Label: "Credit notes", Value: n})
	}
	d.Payments = paymentRows(set.Payments)
	switch inv.Status {
	case StatusDraft:
		d.Mark, d.MarkNote = document.MarkDraft, "a preview as it will be issued; its number, issue date and seller are fixed on issue."
	case StatusVoid:
		d.Mark, d.MarkNote = document.MarkVoid, "this invoice was voided and is not to be paid."
	}
	if inv.Status != StatusVoid {
		balance := inv.BalanceDue
		d.Balance = &balance
	}
	return d
}

func creditNumbers(cns []*CreditNote) string {
	n := make([]string, len(cns))
	for i, cn := range cns {
		n[i] = cn.Number
	}
	return strings.Join(n, ", ")
}

// methodLabels name the payment methods on a document; a payment by
// another method is named by its reference ("Paid in full" for
// mark-paid's), or "Payment".
var methodLabels = map[Method]string{MethodBankTransfer: "Bank transfer", MethodCard: "Card", MethodCash: "Cash"}

// paymentRows lists payments as received, and each reversed one again,
// negative, on the day it was reversed.
func paymentRows(ps []*Payment) []document.Payment {
	var rows []document.Payment
	for _, p := range ps {
		label := methodLabels[p.Method]
		switch {
		case label == "" && p.Reference == "":
			label = "Payment"
		case label == "":
			label = p.Reference
		case p.Reference != "":
			label += " · " + p.Reference
		}
		rows = append(rows, document.Payment{Date: p.ReceivedOn.Time, Label: label, Amount: p.Amount})
		if p.ReversedAt != nil {
			rows = append(rows, document.Payment{Date: civil(*p.ReversedAt), Label: "Reversed: " + deref(p.ReversalReason), Amount: -p.Amount})
		}
	}
	return rows
}

// InvoiceDocument reads invoice id with what its document shows (its
// customer while it is a draft, its payments and credit notes) in one
// snapshot, and builds the document.
func InvoiceDocument(ctx context.Context, db store.Executor, id uuid.UUID, seller document.Party) (*document.Document, *Invoice, error) {
	var (
		inv *Invoice
		cu  *Customer
		set Settlement
	)
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if inv, err = InvoiceGetByID(ctx, db, id); err != nil {
			return err
		}
		if inv.BillTo == nil {
			if cu, err = CustomerGetByID(ctx, db, inv.CustomerID); err != nil {
				return err
			}
		}
		if set.Payments, err = PaymentsOf(ctx, db, id); err != nil {
			return err
		}
		set.CreditNotes, err = CreditNoteList(ctx, db, id, page.Request{})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return Document(inv, cu, seller, set), inv, nil
}

// CreditNoteDocument is cn as its PDF shows it, issued by its seller (by
// seller, the settings now, if it records none) to whom its invoice
// billed: the invoice it credits, its reason, lines and totals. A credit
// note owes nothing, so it has no balance.
func CreditNoteDocument(cn *CreditNote, seller document.Party) *document.Document {
	d := &document.Document{
		Kind: document.KindCreditNote, ID: cn.ID.String(), Number: cn.Number, Currency: cn.Currency, Seller: issuer(cn.Seller, seller),
		BillTo:    document.Party{Name: cn.BillTo.Name, Email: cn.BillTo.Email},
		IssueDate: civil(cn.IssuedAt), Facts: []document.Fact{{Label: "Credits invoice", Value: cn.InvoiceNumber}},
		Memo: "Reason: " + cn.Reason, Subtotal: cn.Subtotal, TaxTotal: cn.TaxTotal, Total: cn.Total,
		Created: cn.IssuedAt, Modified: cn.IssuedAt,
	}
	d.Lines = make([]document.Line, len(cn.Lines))
	for i, l := range cn.Lines {
		d.Lines[i] = document.Line(l.Line)
	}
	return d
}

// civil is t's calendar date in UTC, the zone the service dates invoices in.
func civil(t time.Time) time.Time {
	y, m, day := t.UTC().Date()
	return time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}
