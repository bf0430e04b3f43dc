package invoices

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

type targetInput struct {
	InvoiceID uuid.UUID `json:"invoice_id"`
	Reason    string    `json:"reason"`
}

// InvoiceGet is the get-invoice capability.
func (s *Service) InvoiceGet(ctx context.Context, call capability.Call) (any, error) {
	var in targetInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	var inv *Invoice
	err := store.ReadSnapshot(ctx, s.db, func(db store.Executor) error {
		var err error
		if inv, err = InvoiceGetByID(ctx, db, in.InvoiceID); err != nil || inv.Status != StatusDraft {
			return err
		}
		c, sel, err := customerAndSellerGet(ctx, db, inv.CustomerID)
		if err != nil {
			return err
		}
		inv.Readiness = readinessOf(inv, c, sel, s.today())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return inv.dated(s.BusinessToday()), nil
}

// lockForAction opens the common start of every invoice mutation: lock
// the row (with its lines, which the mutation then reuses), honour
// If-Match, check the status machine.
func lockForAction(ctx context.Context, tx pgx.Tx, call capability.Call, id uuid.UUID, action Action) (*Invoice, error) {
	inv, err := InvoiceLockTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := etag.CheckIfMatch(call.IfMatch, inv.Version); err != nil {
		return nil, err
	}
	if _, err := Transition(inv.Status, action); err != nil {
		return nil, err
	}
	return inv, nil
}

// mutate runs fn in one transaction on invoice id, locked and checked for
// action (lockForAction); fn's invoice is the capability's output.
func (s *Service) mutate(ctx context.Context, call capability.Call, id uuid.UUID, action Action,
	fn func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*Invoice, error)) (any, error) {
	return onLocked(ctx, s, call, id, action, func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*Invoice, error) {
		out, err := fn(ctx, tx, inv)
		if err != nil {
			return nil, err
		}
		return out.dated(s.BusinessToday()), nil
	})
}

// onLocked is mutate for a capability whose output is not the invoice (a
// payment, a credit note).
func onLocked[T any](ctx context.Context, s *Service, call capability.Call, id uuid.UUID, action Action,
	fn func(ctx context.Context, tx pgx.Tx, inv *Invoice) (T, error)) (any, error) {
	return result(store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (T, error) {
		inv, err := lockForAction(ctx, tx, call, id, action)
		if err != nil {
			var zero T
			return zero, err
		}
		return fn(ctx, tx, inv)
	}))
}

// authorize builds the gate's target (the invoice as the approver will see
// it, billed to c, read here when nil; with credit, the credit note it
// would issue, whose total is the amount the policy reads) and asks the
// gate; its refusal is returned as is, so a store.CommitAnd refusal still
// commits what the gate recorded.
func (s *Service) authorize(ctx context.Context, tx pgx.Tx, call capability.Call, inv *Invoice, c *Customer, credit *CreditPreview) (capability.Grant, error) {
	amount := inv.Total
	if credit != nil {
		amount = credit.Total
	}
	return s.authorizeAmount(ctx, tx, call, inv, c, credit, amount)
}

// authorizeAmount is authorize for an effect that moves amount (a
// payment of part of the invoice), not the invoice's or credit note's
// total.
func (s *Service) authorizeAmount(ctx context.Context, tx pgx.Tx, call capability.Call, inv *Invoice, c *Customer, credit *CreditPreview, amount int64) (capability.Grant, error) {
	if c == nil {
		var err error
		if c, err = CustomerGetByID(ctx, tx, inv.CustomerID); err != nil {
			return capability.Grant{}, err
		}
	}
	var v any = Snapshot{Invoice: inv.dated(s.BusinessToday()), Customer: c}
	if credit != nil {
		v = CreditSnapshot{Snapshot: v.(Snapshot), CreditNote: credit}
	}
	snap, err := json.Marshal(v)
	if err != nil {
		return capability.Grant{}, fmt.Errorf("snapshot: %w", err)
	}
	return s.gate.AuthorizeTx(ctx, tx, call, capability.Target{
		Type: "invoice", ID: inv.ID.String(), Version: inv.Version,
		Amount: amount, Currency: inv.Currency, CustomerID: inv.CustomerID, Snapshot: snap,
	})
}

// grantData adds what let a governed call through to an audit event's
// data: the approval spent or the standing allowance drawn, and the
// invocation, when one was needed.
func grantData(grant capability.Grant, data map[string]any) map[string]any {
	switch {
	case grant.Allowance != nil:
		data["allowance_id"], data["invocation_id"] = grant.Allowance.ID.String(), grant.InvocationID
	case grant.ApprovalID != "":
		data["approval_id"], data["invocation_id"] = grant.ApprovalID, grant.InvocationID
	}
	return data
}

// Issue is the issue-invoice capability (consequential). In one
// transaction: lock, state checks and readiness (nothing is created or
// consumed when they fail: a draft that is no legal invoice is 422
// INVOICE_INCOMPLETE, before any approval), the gate, the audit event,
// then the number as the last write.
func (s *Service) Issue(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[targetInput](call)
	if err != nil {
		return nil, err
	}
	return s.mutate(ctx, call, in.InvoiceID, ActionIssue, func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*Invoice, error) {
		now := s.clock()
		// Before the gate: no approver is asked for what cannot be issued.
		c, sel, err := customerAndSellerShareTx(ctx, tx, inv.CustomerID)
		if err != nil {
			return nil, err
		}
		if r := readinessOf(inv, c, sel, s.today()); !r.Ready {
			return nil, incomplete(r)
		}
		grant, err := s.authorize(ctx, tx, call, inv, c, nil)
		if err != nil {
			return nil, err
		}
		// The audit event precedes the numbering so that the series row
		// lock is the last one taken; the number is on the invoice row
		// the event names.
		if err := s.audit(ctx, tx, call, "invoice.issued", "invoice", inv.ID, grantData(grant, map[string]any{
			"version": inv.Version, "total": inv.Total, "currency": inv.Currency, "series": s.prefix,
		})); err != nil {
			return nil, err
		}
		out, err := InvoiceIssueTx(ctx, tx, inv, s.prefix, now, s.today())
		if err != nil {
			return nil, err
		}
		if err := s.emit.EmitTx(ctx, tx, events.New(events.InvoiceIssued, now, out)); err != nil {
			return nil, err
		}
		return out.drew(grant), nil
	})
}

// Delete is the delete-invoice capability (consequential): only drafts.
func (s *Service) Delete(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[targetInput](call)
	if err != nil {
		return nil, err
	}
	err = store.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		inv, err := lockForAction(ctx, tx, call, in.InvoiceID, ActionDelete)
		if err != nil {
			return err
		}
		grant, err := s.authorize(ctx, tx, call, inv, nil, nil)
		if err != nil {
			return err
		}
		if err := InvoiceDeleteTx(ctx, tx, inv.ID); err != nil {
			return err
		}
		if err := s.emit.EmitTx(ctx, tx, events.New(events.InvoiceDeleted, s.clock(), inv)); err != nil {
			return err
		}
		return s.audit(ctx, tx, call, "invoice.deleted", "invoice", inv.ID, map[string]any{
			"approval_id": grant.ApprovalID, "invocation_id": grant.InvocationID,
			"version": inv.Version, "total": inv.Total, "currency": inv.Currency,
		})
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": in.InvoiceID, "deleted": true}, nil
}

// Void is the void-invoice capability (consequential: a void of what was
// sent is a correction, approved like a credit note, ADR-0022 §1): issued
// → void, only while nothing was paid or credited (a settled invoice is
// corrected by a credit note); the gate after the state checks, so no
// approver is asked for what cannot be voided.
func (s *Service) Void(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[targetInput](call)
	if err != nil {
		return nil, err
	}
	return s.mutate(ctx, call, in.InvoiceID, ActionVoid, func(ctx context.Context, tx pgx.Tx, inv *Invoice) (*Invoice, error) {
		if inv.AmountPaid != 0 || inv.AmountCredited != 0 {
			return nil, problem.Conflict(CodeInvalidTransition, fmt.Sprintf(
				"the invoice has %s paid and %s credited, so it cannot be voided: credit what is still owed instead (issue-credit-note for its balance due, %s)",
				money.Display(inv.AmountPaid, inv.Currency), money.Display(inv.AmountCredited, inv.Currency), money.Display(inv.BalanceDue, inv.Currency),
			)).With("current_status", string(inv.Status))
		}
		grant, err := s.authorize(ctx, tx, call, inv, nil, nil)
		if err != nil {
			return nil, err
		}
		now := s.clock()
		out, err := InvoiceVoidTx(ctx, tx, inv, now)
		if err != nil {
			return nil, err
		}
		if err := s.emit.EmitTx(ctx, tx, events.New(events.InvoiceVoided, now, out)); err != nil {
			return nil, err
		}
		data := grantData(grant, map[string]any{"version": out.Version, "number": out.Number})
		if in.Reason != "" {
			data["reason"] = in.Reason
		}
		return out.drew(grant), s.audit(ctx, tx, call, "invoice.voided", "invoice", out.ID, data)
	})
}
