package invoices

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

type draftInput struct {
	InvoiceID  uuid.UUID       `json:"invoice_id"`
	CustomerID *uuid.UUID      `json:"customer_id"`
	Currency   *string         `json:"currency"`
	DueDate    json.RawMessage `json:"due_date"`
	Memo       *string         `json:"memo"`
	Lines      *[]LineInput    `json:"lines"`
	// SupplyDate, ServicePeriod and PaymentTermsDays are absent (keep),
	// null (clear) or a value.
	SupplyDate       json.RawMessage `json:"supply_date"`
	ServicePeriod    json.RawMessage `json:"service_period"`
	PaymentTermsDays json.RawMessage `json:"payment_terms_days"`
	PurchaseOrder    *string         `json:"purchase_order"`
	BuyerReference   *string         `json:"buyer_reference"`
}

// applyTerms writes the supply and terms members in sent onto inv: a date
// of supply or a service period (not both; a period that ends before it
// starts is refused), payment terms in days net or a due date (not both),
// the purchase order and the buyer reference.
func (in draftInput) applyTerms(inv *Invoice) error {
	if len(in.SupplyDate) > 0 {
		inv.SupplyDate = nil
		if string(in.SupplyDate) != "null" {
			var d Date
			if err := json.Unmarshal(in.SupplyDate, &d); err != nil {
				return problem.Invalid("supply_date", "must be a date YYYY-MM-DD")
			}
			inv.SupplyDate = &d
		}
	}
	if len(in.ServicePeriod) > 0 {
		inv.ServicePeriod = nil
		if string(in.ServicePeriod) != "null" {
			var p Period
			if err := json.Unmarshal(in.ServicePeriod, &p); err != nil {
				return problem.Invalid("service_period", "must be {\"start\": \"YYYY-MM-DD\", \"end\": \"YYYY-MM-DD\"}")
			}
			if p.End.Before(p.Start.Time) {
				return problem.Invalid("service_period.end", "is %s, before the period's start %s", p.End, p.Start)
			}
			inv.ServicePeriod = &p
		}
	}
	if inv.SupplyDate != nil && inv.ServicePeriod != nil {
		return problem.Invalid("service_period", "give a date of supply (supply_date) or a service period, not both")
	}
	if len(in.PaymentTermsDays) > 0 {
		inv.PaymentTermsDays = nil
		if string(in.PaymentTermsDays) != "null" {
			var days int
			if err := json.Unmarshal(in.PaymentTermsDays, &days); err != nil {
				return fmt.Errorf("payment_terms_days: %w", err)
			}
			inv.PaymentTermsDays = &days
		}
	}
	if inv.PaymentTermsDays != nil && inv.DueDate != nil {
		return problem.Invalid("payment_terms_days", "give payment terms (days net, the due date follows from the issue date) or a due date, not both")
	}
	var bad []problem.FieldError
	if in.PurchaseOrder != nil {
		v, fe := party.Line("purchase_order", *in.PurchaseOrder, maxReference, false)
		inv.PurchaseOrder, bad = v, append(bad, fe...)
	}
	if in.BuyerReference != nil {
		v, fe := party.Line("buyer_reference", *in.BuyerReference, maxReference, false)
		inv.BuyerReference, bad = v, append(bad, fe...)
	}
	return party.Join(bad)
}

// dueDate parses an optional, nullable due date that must not be before
// the issue date (today for a draft). ok is false when there is none.
func (s *Service) dueDate(raw json.RawMessage) (d Date, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Date{}, false, nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return Date{}, false, problem.Invalid("due_date", "must be a date YYYY-MM-DD")
	}
	if d, err = ParseDate(str); err != nil {
		return Date{}, false, problem.Invalid("due_date", "must be a date YYYY-MM-DD")
	}
	if today := s.today(); d.Before(today.Time) {
		return Date{}, false, problem.Invalid("due_date", "must not be before the issue date (%s)", today)
	}
	return d, true, nil
}

func (s *Service) dueDatePtr(raw json.RawMessage) (*Date, error) {
	d, ok, err := s.dueDate(raw)
	if err != nil || !ok {
		return nil, err
	}
	return &d, nil
}

func customerExists(ctx context.Context, db store.Executor, id uuid.UUID) (*Customer, error) {
	c, err := CustomerGetByID(ctx, db, id)
	if problem.HasCode(err, problem.CodeNotFound) {
		return nil, problem.Invalid("customer_id", "there is no customer with id %s", id)
	}
	return c, err
}

// DraftCreate is the create-draft-invoice capability.
func (s *Service) DraftCreate(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[draftInput](call)
	if err != nil {
		return nil, err
	}
	due, err := s.dueDatePtr(in.DueDate)
	if err != nil {
		return nil, err
	}
	if in.Currency != nil {
		if err := checkCurrency("currency", *in.Currency); err != nil {
			return nil, err
		}
	}
	var lineIn []LineInput
	if in.Lines != nil {
		lineIn = *in.Lines
	}
	lines, sub, tax, total, err := ComputeLines(lineIn)
	if err != nil {
		return nil, err
	}
	inv := &Invoice{ID: uuid.Must(uuid.NewV7()), DueDate: due, Lines: lines, Subtotal: sub, TaxTotal: tax, Total: total, CreatedAt: s.clock()}
	if in.Memo != nil {
		inv.Memo = *in.Memo
	}
	if err := in.applyTerms(inv); err != nil {
		return nil, err
	}
	return result(store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Invoice, error) {
		c, err := customerExists(ctx, tx, *in.CustomerID)
		if err != nil {
			return nil, err
		}
		inv.CustomerID, inv.Currency = c.ID, c.Currency
		if in.Currency != nil {
			inv.Currency = *in.Currency
		}
		out, err := InvoiceCreate(ctx, tx, inv)
		if err != nil {
			return nil, err
		}
		return out, s.audit(ctx, tx, call, "invoice.draft_created", "invoice", out.ID, map[string]any{
			"customer_id": out.CustomerID, "currency": out.Currency, "total": out.Total, "lines": len(out.Lines)})
	}))
}

// DraftUpdate is the update-draft-invoice capability: absent fields stay,
// lines (when sent) replace all lines.
func (s *Service) DraftUpdate(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[draftInput](call)
	if err != nil {
		return nil, err
	}
	return s.mutate(ctx, call, in.InvoiceID, ActionUpdate, func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*Invoice, error) {
		if err := s.applyDraft(ctx, tx, inv, in); err != nil {
			return nil, err
		}
		out, err := InvoiceUpdateDraftTx(ctx, tx, inv, s.clock())
		if err != nil {
			return nil, err
		}
		return out, s.audit(ctx, tx, call, "invoice.draft_updated", "invoice", out.ID, map[string]any{
			"version": out.Version, "total": out.Total, "lines": len(out.Lines)})
	})
}

// applyDraft writes the members in sent onto the locked draft inv.
func (s *Service) applyDraft(ctx context.Context, tx pgx.Tx, inv *Invoice, in draftInput) error {
	if in.Currency != nil && *in.Currency != inv.Currency {
		return problem.Invalid("currency", "the draft is in %s and its currency cannot change; create a new draft instead", inv.Currency)
	}
	if in.CustomerID != nil {
		c, err := customerExists(ctx, tx, *in.CustomerID)
		if err != nil {
			return err
		}
		inv.CustomerID = c.ID
	}
	var err error
	if len(in.DueDate) > 0 {
		if inv.DueDate, err = s.dueDatePtr(in.DueDate); err != nil {
			return err
		}
	}
	if in.Memo != nil {
		inv.Memo = *in.Memo
	}
	if err := in.applyTerms(inv); err != nil {
		return err
	}
	lines := in.Lines
	if lines == nil && inv.TaxRounding != RoundPerGroup {
		// A draft written before VAT per group is recomputed by it the
		// first time it changes (ADR-0021).
		kept := make([]LineInput, len(inv.Lines))
		for i, l := range inv.Lines {
			kept[i] = l.Input()
		}
		lines = &kept
	}
	if lines != nil {
		if inv.Lines, inv.Subtotal, inv.TaxTotal, inv.Total, err = ComputeLines(*lines); err != nil {
			return err
		}
		inv.TaxRounding = RoundPerGroup
	}
	return nil
}
