package invoices

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/page"
	"github.com/jackc/pgx/v5"
)

// CreditNote corrects an issued invoice: it takes Total (minor units of
// its invoice's currency, tax included) off what the invoice asks to be
// paid. It has its own gapless number series and, once issued, never
// changes.
type CreditNote struct {
	ID            uuid.UUID `json:"id"`
	Number        string    `json:"number"`
	InvoiceID     uuid.UUID `json:"invoice_id"`
	InvoiceNumber string    `json:"invoice_number"`
	// InvoiceIssuedAt is when the invoice it corrects was issued, for its
	// document (Article 219: a correcting document names the invoice).
	InvoiceIssuedAt time.Time `json:"-"`
	// InvoiceBuyerReference is the invoice's buyer reference, which its
	// credit notes quote as it did.
	InvoiceBuyerReference string `json:"-"`
	// InvoiceSupplyDate and InvoicePeriod are the supply the invoice
	// billed, which its credit notes' e-invoices state (BR-IC-11 asks it
	// of an intra-community supply's).
	InvoiceSupplyDate *Date   `json:"-"`
	InvoicePeriod     *Period `json:"-"`
	// InvoicePurchaseOrder is the invoice's purchase order, which its
	// credit notes' e-invoices quote (Peppol asks a buyer reference or an
	// order reference of every document, PEPPOL-EN16931-R003).
	InvoicePurchaseOrder string       `json:"-"`
	Currency             string       `json:"currency"`
	Reason               string       `json:"reason"`
	Lines                []CreditLine `json:"lines"`
	Subtotal             int64        `json:"subtotal"`
	TaxTotal             int64        `json:"tax_total"`
	Total                int64        `json:"total"`
	// BillTo is whom the credited invoice billed.
	BillTo BillTo `json:"bill_to"`
	// Seller is who issued the credit note, as the seller settings said
	// then; null as for an invoice (Invoice.Seller).
	Seller *Seller `json:"seller"`
	// InvoiceVersion is the invoice version the approval was bound to.
	InvoiceVersion int64 `json:"invoice_version"`
	// ApprovalID is the approval it was issued against, AllowanceID the
	// standing allowance it drew instead (one of them is null).
	ApprovalID  *uuid.UUID `json:"approval_id"`
	AllowanceID *uuid.UUID `json:"allowance_id"`
	IssuedBy    uuid.UUID  `json:"issued_by"`
	IssuedAt    time.Time  `json:"issued_at"`
	// Allowance is in the result of the call that drew it: what is left.
	Allowance *capability.AllowanceDraw `json:"allowance,omitempty"`
	// Invoice is the credited invoice after the credit note was issued.
	Invoice *Invoice `json:"invoice,omitempty"`
}

// Cursor is the credit note's position in its invoice's list.
func (cn *CreditNote) Cursor() page.Cursor { return page.Cursor{CreatedAt: cn.IssuedAt, ID: cn.ID} }

func (cn *CreditNote) locationID() string { return cn.ID.String() }

// IssueCreditNote is the issue-credit-note capability (consequential). In
// one transaction: lock the invoice, state and amount checks (nothing is
// created or consumed when they fail), the gate (bound to the invoice's
// version and the exact credit in the input), the audit event, the
// invoice's balance, then the number as the last write.
func (s *Service) IssueCreditNote(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[creditInput](call)
	if err != nil {
		return nil, err
	}
	return onLocked(ctx, s, call, in.InvoiceID, ActionCredit, func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*CreditNote, error) {
		done, err := creditedByLineTx(ctx, tx, inv.ID)
		if err != nil {
			return nil, err
		}
		plan, err := planCredit(inv, done, in, s.cnPrefix)
		if err != nil {
			return nil, err
		}
		grant, err := s.authorize(ctx, tx, call, inv, nil, plan)
		if err != nil {
			return nil, err
		}
		cn := &CreditNote{
			ID: uuid.Must(uuid.NewV7()), Reason: in.Reason, Lines: plan.Lines, Subtotal: plan.Subtotal, TaxTotal: plan.TaxTotal, Total: plan.Total,
			IssuedBy: call.Principal.UserID, IssuedAt: s.clock(),
		}
		if d := grant.Allowance; d != nil {
			cn.AllowanceID = &d.ID
		} else {
			id, err := uuid.Parse(grant.ApprovalID)
			if err != nil {
				return nil, fmt.Errorf("issue-credit-note: the gate granted neither an approval nor an allowance: %w", err)
			}
			cn.ApprovalID = &id
		}
		// As for an invoice, the event precedes the numbering so that the
		// series row lock is the last one taken.
		if err := s.audit(ctx, tx, call, "credit_note.issued", "credit_note", cn.ID, grantData(grant, map[string]any{
			"invoice_id": inv.ID, "invoice_version": inv.Version,
			"total": cn.Total, "currency": inv.Currency, "series": s.cnPrefix, "balance_due_after": plan.BalanceDueAfter,
		})); err != nil {
			return nil, err
		}
		if cn, err = CreditNoteIssueTx(ctx, tx, inv, cn, s.cnPrefix); err != nil {
			return nil, err
		}
		cn.Invoice.dated(s.BusinessToday())
		// After the number, which the event carries: the series row stays
		// locked for this one insert more, as for invoice.issued.
		if err := s.emitSettled(ctx, tx, events.CreditNoteIssued, cn.IssuedAt, cn, inv, cn.Invoice); err != nil {
			return nil, err
		}
		cn.Allowance = grant.Allowance
		return cn, nil
	})
}

type creditNoteTarget struct {
	CreditNoteID uuid.UUID `json:"credit_note_id"`
}

// CreditNoteGet is the get-credit-note capability.
func (s *Service) CreditNoteGet(ctx context.Context, call capability.Call) (any, error) {
	var in creditNoteTarget
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	return result(CreditNoteGetByID(ctx, s.db, in.CreditNoteID))
}

// CreditNoteListAll is the list-credit-notes capability: an invoice's
// credit notes, oldest first.
func (s *Service) CreditNoteListAll(ctx context.Context, call capability.Call) (any, error) {
	return listOf(ctx, s, call, CreditNoteList)
}

// Credit note capability names.
const (
	CapIssueCreditNote = "issue-credit-note"
	CapListCreditNotes = "list-credit-notes"
	CapGetCreditNote   = "get-credit-note"
)

func creditNoteCapabilities(svc *Service) []capability.Capability {
	return []capability.Capability{
		{Descriptor: capability.Descriptor{
			Name: CapIssueCreditNote,
			Description: "Issue a credit note against an issued invoice, taking money off what it still owes (never more than its balance_due), with a reason. Credit either lines: [{position, quantity}] (position is the line's index in the invoice's lines, from 0; quantity at most what is left of it) or amount (minor units, tax included, split over the invoice's tax rates). It gets the next number of the credit note series and never changes. " +
				"This needs an approval by a back-office approver: without one the answer is APPROVAL_REQUIRED with an approval_id to wait on; do not retry until it is approved, then call again with the same input. Returns the credit note with the invoice after it.",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["invoice_id", "reason"], "properties": {
				"invoice_id": ` + uuidSchema + `,
				"reason": {"type": "string", "format": "visible-text", "minLength": 1, "maxLength": 1000, "description": "why the invoice is credited; printed on the credit note"},
				"lines": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {"type": "object", "additionalProperties": false, "required": ["position", "quantity"], "properties": {
					"position": {"type": "integer", "minimum": 0, "maximum": 999, "description": "index of the invoice line, from 0"},
					"quantity": ` + quantitySchema + `}}},
				"amount": {"type": "integer", "minimum": 1, "description": "minor units of the invoice's currency, tax included; instead of lines"},
				"currency": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "optional check: the invoice's currency (ISO 4217); another is refused"}}}`),
			Risk: capability.RiskConsequential,
		}, Handler: svc.IssueCreditNote},
		{Descriptor: capability.Descriptor{
			Name:        CapListCreditNotes,
			Description: "List the credit notes of an invoice, oldest first. Returns {data: [credit note], has_more, next_cursor}.",
			InputSchema: schema(ofInvoiceSchema),
			Risk:        capability.RiskRead,
		}, Handler: svc.CreditNoteListAll},
		{Descriptor: capability.Descriptor{
			Name:        CapGetCreditNote,
			Description: "Get one credit note by credit_note_id: its number, the invoice it credits, reason, lines and totals (minor units of its currency).",
			InputSchema: schema(`{"type": "object", "additionalProperties": false, "required": ["credit_note_id"], "properties": {"credit_note_id": ` + uuidSchema + `}}`),
			Risk:        capability.RiskRead,
		}, Handler: svc.CreditNoteGet},
	}
}
