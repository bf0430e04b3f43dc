package invoices

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

type customerInput struct {
	CustomerID     uuid.UUID      `json:"customer_id"`
	Name           *string        `json:"name"`
	Email          *string        `json:"email"`
	Currency       *string        `json:"currency"`
	Address        *party.Address `json:"address"`
	VATID          *string        `json:"vat_id"`
	TaxNumber      *string        `json:"tax_number"`
	BuyerReference *string        `json:"buyer_reference"`
	Language       *string        `json:"language"`
	// PaymentTermsDays is absent (keep), null (the seller's) or days.
	PaymentTermsDays json.RawMessage `json:"payment_terms_days"`
	EInvoiceFormat   *string         `json:"einvoice_format"`
	PeppolID         *string         `json:"peppol_id"`
}

// apply writes the members in sent onto c, each checked; the refusal
// names every field that is wrong.
func (in customerInput) apply(c *Customer) error {
	if in.Currency != nil {
		if err := checkCurrency("currency", *in.Currency); err != nil {
			return err
		}
		c.Currency = *in.Currency
	}
	if in.Name != nil {
		c.Name = *in.Name
	}
	if in.Email != nil {
		c.Email = *in.Email
	}
	var bad []problem.FieldError
	if in.Address != nil {
		a, fe := in.Address.Check("address")
		c.Address, bad = a, append(bad, fe...)
	}
	if in.VATID != nil {
		c.VATID = ""
		if strings.TrimSpace(*in.VATID) != "" {
			v, err := party.ParseVATID("vat_id", *in.VATID)
			if pe, ok := problem.As(err); ok {
				bad = append(bad, pe.Errors...)
			}
			c.VATID = v
		}
	}
	if in.TaxNumber != nil {
		v, fe := party.Line("tax_number", *in.TaxNumber, maxTaxNumber, false)
		c.TaxNumber, bad = v, append(bad, fe...)
	}
	if in.BuyerReference != nil {
		v, fe := party.Line("buyer_reference", *in.BuyerReference, maxReference, false)
		c.BuyerReference, bad = v, append(bad, fe...)
	}
	if in.Language != nil {
		c.Language = *in.Language
	}
	if in.EInvoiceFormat != nil {
		c.EInvoiceFormat = einvoice.None
		if *in.EInvoiceFormat != string(einvoice.None) {
			f, err := einvoice.ParseFormat("einvoice_format", *in.EInvoiceFormat)
			if pe, ok := problem.As(err); ok {
				bad = append(bad, pe.Errors...)
			}
			c.EInvoiceFormat = f
		}
	}
	if in.PeppolID != nil {
		c.PeppolID = ""
		if strings.TrimSpace(*in.PeppolID) != "" {
			e, err := einvoice.ParseEndpoint("peppol_id", *in.PeppolID)
			if pe, ok := problem.As(err); ok {
				bad = append(bad, pe.Errors...)
			}
			c.PeppolID = e.String()
		}
	}
	if len(in.PaymentTermsDays) > 0 {
		c.PaymentTermsDays = nil
		if string(in.PaymentTermsDays) != "null" {
			var days int
			if err := json.Unmarshal(in.PaymentTermsDays, &days); err != nil {
				return fmt.Errorf("payment_terms_days: %w", err)
			}
			c.PaymentTermsDays = &days
		}
	}
	return party.Join(bad)
}

// Limits of the references a customer or invoice carries: EN 16931 sets
// none; a Leitweg-ID has at most 46 characters, a purchase order number
// rarely 30.
const (
	maxTaxNumber = 50
	maxReference = 200
)

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
	c := &Customer{ID: uuid.Must(uuid.NewV7()), Language: "en", EInvoiceFormat: einvoice.None, CreatedAt: s.clock()}
	if err := in.apply(c); err != nil {
		return nil, err
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
	if err := in.apply(&Customer{}); err != nil {
		return nil, err
	}
	return result(store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Customer, error) {
		c, err := CustomerLockTx(ctx, tx, in.CustomerID)
		if err != nil {
			return nil, err
		}
		if err := etag.CheckIfMatch(call.IfMatch, c.Version); err != nil {
			return nil, err
		}
		if err := in.apply(c); err != nil {
			return nil, err
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
