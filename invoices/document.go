package invoices

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/store"
)

// CodeSellerNotConfigured is the 503 problem code of a document asked for
// while no seller is set: a document that does not say who issued it is
// no invoice.
const CodeSellerNotConfigured = "SELLER_NOT_CONFIGURED"

// SellerSettingsHint says how to set the seller a document needs.
const SellerSettingsHint = "documents need the seller's details: an admin sets them with `invoiced seller set` or PUT /v1/seller"

// RequireSeller is nil when seller can issue documents, the 503 saying
// how to set one otherwise.
func RequireSeller(seller document.Party) error {
	if seller.Name == "" {
		return problem.New(http.StatusServiceUnavailable, CodeSellerNotConfigured, SellerSettingsHint)
	}
	return nil
}

// Seller is who issued an invoice or credit note, frozen into it by its
// issuing statement from the seller (package seller): a legal document
// names its seller as at issue, whatever the seller says later.
type Seller struct {
	seller.Details
}

// UnmarshalJSON reads a frozen seller, also in the shape documents frozen
// before the seller was data have ({name, address, tax_id}; migration
// 00040): the name is the legal name, the address its street lines, the
// tax id the VAT identifier when it reads as one, else the tax number.
func (s *Seller) UnmarshalJSON(b []byte) error {
	var probe struct {
		LegalName *string `json:"legal_name"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.LegalName != nil {
		if err := json.Unmarshal(b, &s.Details); err != nil {
			return err
		}
	} else {
		var old struct {
			Name    string `json:"name"`
			Address string `json:"address"`
			TaxID   string `json:"tax_id"`
		}
		if err := json.Unmarshal(b, &old); err != nil {
			return err
		}
		s.Details = seller.Details{LegalName: old.Name}
		for _, l := range strings.Split(old.Address, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				s.Address.Lines = append(s.Address.Lines, l)
			}
		}
		if v, err := party.ParseVATID("tax_id", old.TaxID); err == nil {
			s.VATID = v
		} else {
			s.TaxNumber = old.TaxID
		}
	}
	if s.Address.Lines == nil {
		s.Address.Lines = []string{}
	}
	if s.BankAccounts == nil {
		s.BankAccounts = []party.BankAccount{}
	}
	return nil
}

// CurrentSeller is the seller as it is now, nil while none is set: what
// a draft's document names, and one issued while none was set.
func CurrentSeller(ctx context.Context, db store.Executor) (*Seller, error) {
	cur, err := seller.Get(ctx, db)
	if err != nil || cur == nil {
		return nil, err
	}
	return &Seller{Details: cur.Details}, nil
}

// sellerOf is who a document says issued it: the seller frozen at issue,
// or current (the seller now) for a draft, and for a document issued
// before sellers were recorded or while none was set; nil when neither.
func sellerOf(frozen, current *Seller) *Seller {
	if frozen != nil {
		return frozen
	}
	return current
}

// issuer is sellerOf(frozen, current) as a document's party.
func issuer(frozen, current *Seller) document.Party {
	s := sellerOf(frozen, current)
	if s == nil {
		return document.Party{}
	}
	return document.Party{Name: s.LegalName, TradingName: s.TradingName, Address: s.Address, VATID: s.VATID,
		TaxNumber: s.TaxNumber, Registration: s.Registration, Contact: s.Contact}
}

// billToParty is whom a document bills.
func billToParty(b BillTo) document.Party {
	return document.Party{Name: b.Name, Address: b.Address, VATID: b.VATID, TaxNumber: b.TaxNumber, Email: b.Email}
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
func Document(inv *Invoice, customer *Customer, seller *Seller, set Settlement) *document.Document {
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
	if inv.SupplyDate != nil {
		d.SupplyDate = inv.SupplyDate.Time
	}
	if p := inv.ServicePeriod; p != nil {
		d.ServicePeriod = document.Period{Start: p.Start.Time, End: p.End.Time}
	}
	d.PurchaseOrder, d.BuyerReference = inv.PurchaseOrder, inv.BuyerReference
	if inv.Status == StatusDraft || inv.Status == StatusIssued {
		d.PaymentTermsDays = inv.PaymentTermsDays
		if s := sellerOf(inv.Seller, seller); s != nil {
			d.BankAccounts = s.BankAccounts
		}
	}
	switch {
	case inv.BillTo != nil:
		d.BillTo, d.Language = billToParty(*inv.BillTo), document.Language(inv.BillTo.Language)
	case customer != nil:
		d.BillTo = billToParty(BillTo{Name: customer.Name, Email: customer.Email, Address: customer.Address,
			VATID: customer.VATID, TaxNumber: customer.TaxNumber})
		d.Language = document.Language(customer.Language)
		if d.BuyerReference == "" {
			d.BuyerReference = customer.BuyerReference
		}
		if d.PaymentTermsDays == nil && inv.DueDate == nil {
			d.PaymentTermsDays = customer.PaymentTermsDays
		}
	}
	d.Lines = make([]document.Line, len(inv.Lines))
	for i, l := range inv.Lines {
		d.Lines[i] = document.Line(l)
	}
	for _, cn := range set.CreditNotes {
		d.CreditNotes = append(d.CreditNotes, cn.Number)
	}
	d.Payments = paymentRows(set.Payments)
	switch inv.Status {
	case StatusDraft:
		d.Mark = document.MarkDraft
	case StatusVoid:
		d.Mark = document.MarkVoid
	}
	if inv.Status != StatusVoid {
		balance := inv.BalanceDue
		d.Balance = &balance
	}
	return d
}

// paymentRows lists payments as received, and each reversed one again,
// negative, on the day it was reversed; the document names their methods
// in its language.
func paymentRows(ps []*Payment) []document.Payment {
	var rows []document.Payment
	for _, p := range ps {
		rows = append(rows, document.Payment{Date: p.ReceivedOn.Time, Method: document.PaymentMethod(p.Method), Reference: p.Reference, Amount: p.Amount})
		if p.ReversedAt != nil {
			rows = append(rows, document.Payment{Date: civil(*p.ReversedAt), Reversal: true, Reference: deref(p.ReversalReason), Amount: -p.Amount})
		}
	}
	return rows
}

// InvoiceDocument reads invoice id with what its document shows (its
// customer while it is a draft, its payments and credit notes) in one
// snapshot, and builds the document.
func InvoiceDocument(ctx context.Context, db store.Executor, id uuid.UUID) (*document.Document, *Invoice, error) {
	var (
		inv    *Invoice
		cu     *Customer
		seller *Seller
		set    Settlement
	)
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if inv, err = InvoiceGetByID(ctx, db, id); err != nil {
			return err
		}
		if inv.Seller == nil {
			if seller, err = CurrentSeller(ctx, db); err != nil {
				return err
			}
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
func CreditNoteDocument(cn *CreditNote, seller *Seller) *document.Document {
	d := &document.Document{
		Kind: document.KindCreditNote, ID: cn.ID.String(), Number: cn.Number, Currency: cn.Currency, Seller: issuer(cn.Seller, seller),
		BillTo: billToParty(cn.BillTo), Language: document.Language(cn.BillTo.Language), BuyerReference: cn.InvoiceBuyerReference,
		IssueDate: civil(cn.IssuedAt), Corrects: &document.Reference{Number: cn.InvoiceNumber, Date: civil(cn.InvoiceIssuedAt)},
		Reason: cn.Reason, Subtotal: cn.Subtotal, TaxTotal: cn.TaxTotal, Total: cn.Total,
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
