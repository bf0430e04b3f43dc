package invoices

import (
	"context"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

type customerInput struct {
	CustomerID uuid.UUID `json:"customer_id"`
	Name       *string   `json:"name"`
	Email      *string   `json:"email"`
	Currency   *string   `json:"currency"`
}

func checkCurrency(field, c string) error {
	if !money.Valid(c) {
		return problem.Invalid(field, "%q is not an ISO 4217 currency code", c)
	}
	return nil
}

// CustomerCreate is the create-customer capability.
func (s *Service) CustomerCreate(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[customerInput](call)
	if err != nil {
		return nil, err
	}
	if err := checkCurrency("currency", *in.Currency); err != nil {
		return nil, err
	}
	c := &Customer{ID: uuid.Must(uuid.NewV7()), Name: *in.Name, Currency: *in.Currency, CreatedAt: s.clock()}
	if in.Email != nil {
		c.Email = *in.Email
	}
	return result(store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Customer, error) {
		out, err := CustomerCreate(ctx, tx, c)
		if err != nil {
			return nil, err
		}
		return out, s.audit(ctx, tx, call, "customer.created", "customer", out.ID, out)
	}))
}

// CustomerUpdate is the update-customer capability.
func (s *Service) CustomerUpdate(ctx context.Context, call capability.Call) (any, error) {
	in, err := writable[customerInput](call)
	if err != nil {
		return nil, err
	}
	if in.Currency != nil {
		if err := checkCurrency("currency", *in.Currency); err != nil {
			return nil, err
		}
	}
	return result(store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Customer, error) {
		c, err := CustomerLockTx(ctx, tx, in.CustomerID)
		if err != nil {
			return nil, err
		}
		if err := etag.CheckIfMatch(call.IfMatch, c.Version); err != nil {
			return nil, err
		}
		if in.Name != nil {
			c.Name = *in.Name
		}
		if in.Email != nil {
			c.Email = *in.Email
		}
		if in.Currency != nil {
			c.Currency = *in.Currency
		}
		out, err := CustomerUpdateTx(ctx, tx, c, s.clock())
		if err != nil {
			return nil, err
		}
		if err := InvoiceDraftsTouchByCustomerTx(ctx, tx, c.ID, s.clock()); err != nil {
			return nil, err
		}
		return out, s.audit(ctx, tx, call, "customer.updated", "customer", out.ID, out)
	}))
}

// CustomerGet is the get-customer capability.
func (s *Service) CustomerGet(ctx context.Context, call capability.Call) (any, error) {
	var in customerInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	return result(CustomerGetByID(ctx, s.db, in.CustomerID))
}

type customerListInput struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// CustomerListAll is the list-customers capability.
func (s *Service) CustomerListAll(ctx context.Context, call capability.Call) (any, error) {
	var in customerListInput
	if err := decode(call, &in); err != nil {
		return nil, err
	}
	p := page.Request{Limit: in.Limit}
	if in.Cursor != "" {
		var err error
		if p.After, err = page.ParseCursor(in.Cursor); err != nil {
			return nil, err
		}
	}
	rows, err := CustomerList(ctx, s.db, p.Ahead())
	if err != nil {
		return nil, err
	}
	return page.Of(rows, p.Limit), nil
}
