package invoices

import (
	"context"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
)

// CodeNotIssued is the 409 problem code of an e-invoice asked of a
// draft, which is no invoice yet.
const CodeNotIssued = "NOT_ISSUED"

// EInvoice is what the e-invoice of the issued invoice inv states: its
// document as issued (frozen buyer and seller; the seller's bank accounts
// whatever has been paid since, as the invoice asked to be paid), with
// current, the seller now, only for an invoice issued before sellers were
// frozen. A draft is a 409.
func EInvoice(inv *Invoice, current *Seller) (einvoice.Invoice, error) {
	if inv.Status == StatusDraft {
		return einvoice.Invoice{}, problem.Conflict(CodeNotIssued,
			"the invoice is a draft: only an issued invoice has an e-invoice; issue it first").With("current_status", string(inv.Status))
	}
	d := Document(inv, nil, current, Settlement{})
	d.Mark, d.Balance, d.BankAccounts = "", nil, nil
	if s := sellerOf(inv.Seller, current); s != nil {
		d.BankAccounts = s.BankAccounts
	}
	if err := RequireSeller(d.Seller); err != nil {
		return einvoice.Invoice{}, err
	}
	e := einvoice.Invoice{Document: d}
	if inv.BillTo != nil && inv.BillTo.PeppolID != "" {
		e.BuyerEndpoint, _ = einvoice.ParseEndpoint("peppol_id", inv.BillTo.PeppolID)
	}
	return e, nil
}

// InvoiceEInvoice reads invoice id (and the seller now, for one issued
// before sellers were frozen) in one snapshot and returns its e-invoice's
// facts (EInvoice).
func InvoiceEInvoice(ctx context.Context, db store.Executor, id uuid.UUID) (einvoice.Invoice, *Invoice, error) {
	var (
		inv     *Invoice
		current *Seller
	)
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if inv, err = InvoiceGetByID(ctx, db, id); err != nil {
			return err
		}
		if inv.Seller == nil {
			current, err = CurrentSeller(ctx, db)
		}
		return err
	})
	if err != nil {
		return einvoice.Invoice{}, nil, err
	}
	e, err := EInvoice(inv, current)
	return e, inv, err
}

// CreditNoteEInvoice is what the e-invoice of cn states: its document,
// issued by its frozen seller (current, the seller now, for one that
// froze none), billed to whom its invoice billed, naming that invoice
// (BG-3).
func CreditNoteEInvoice(cn *CreditNote, current *Seller) (einvoice.Invoice, error) {
	d := CreditNoteDocument(cn, current)
	if err := RequireSeller(d.Seller); err != nil {
		return einvoice.Invoice{}, err
	}
	d.PurchaseOrder = cn.InvoicePurchaseOrder
	if cn.InvoiceSupplyDate != nil {
		d.SupplyDate = cn.InvoiceSupplyDate.Time
	}
	if p := cn.InvoicePeriod; p != nil {
		d.ServicePeriod = document.Period{Start: p.Start.Time, End: p.End.Time}
	}
	e := einvoice.Invoice{Document: d}
	if cn.BillTo.PeppolID != "" {
		e.BuyerEndpoint, _ = einvoice.ParseEndpoint("peppol_id", cn.BillTo.PeppolID)
	}
	return e, nil
}
