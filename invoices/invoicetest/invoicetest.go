// Package invoicetest builds customers and invoices straight in the store
// for tests of other packages (approvals, steploop) that need a target row.
package invoicetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// CustomerOpts tweaks Customer; zero fields take defaults.
type CustomerOpts struct {
	Name     string // default "Acme GmbH"
	Currency string // default EUR
}

// CustomerAddress is every factory customer's address: a customer an
// invoice can be issued to.
var CustomerAddress = party.Address{Lines: []string{"Marktplatz 1"}, Postcode: "80331", City: "München", Country: "DE"}

// DefaultSeller is the seller apptest's service starts with: all that a
// legal invoice says of its seller.
var DefaultSeller = seller.Details{
	LegalName: "Nordlicht Consulting GmbH",
	Address:   party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin", Country: "DE"},
	VATID:     "DE136695976", Registration: "Amtsgericht Charlottenburg, HRB 12345 B",
	Contact:      party.Contact{Name: "Ada Buchhaltung", Email: "billing@nordlicht.example"},
	BankAccounts: []party.BankAccount{{IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}},
}

// Customer inserts a customer, with an address.
func Customer(ctx context.Context, t testing.TB, db store.Executor, opts CustomerOpts) *invoices.Customer {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "Acme GmbH"
	}
	if opts.Currency == "" {
		opts.Currency = "EUR"
	}
	c, err := invoices.CustomerCreate(ctx, db, &invoices.Customer{
		ID: uuid.Must(uuid.NewV7()), Name: opts.Name, Email: "billing@example.com", Currency: opts.Currency,
		Address:   CustomerAddress,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	})
	require.NoError(t, err)
	return c
}

// DraftOpts tweaks Draft; zero fields take defaults.
type DraftOpts struct {
	// CustomerID of an existing customer; nil creates one.
	CustomerID *uuid.UUID
	// Currency defaults to EUR.
	Currency string
	// Lines default to one line of 2 × 50.00 at 20 % tax (total 120.00).
	Lines []invoices.LineInput
	// DueDate is none by default.
	DueDate *invoices.Date
}

// Draft inserts a draft invoice with its lines in db (a pool or the
// caller's transaction).
func Draft(ctx context.Context, t testing.TB, db store.Executor, opts DraftOpts) *invoices.Invoice {
	t.Helper()
	if opts.Currency == "" {
		opts.Currency = "EUR"
	}
	if opts.CustomerID == nil {
		c := Customer(ctx, t, db, CustomerOpts{Currency: opts.Currency})
		opts.CustomerID = &c.ID
	}
	if opts.Lines == nil {
		opts.Lines = []invoices.LineInput{{Description: "Consulting", Quantity: 2 * quantity.One, UnitAmount: 5000, TaxRateBPS: 2000}}
	}
	lines, sub, tax, total, err := invoices.ComputeLines(opts.Lines)
	require.NoError(t, err)
	inv, err := invoices.InvoiceCreate(ctx, db, &invoices.Invoice{
		ID: uuid.Must(uuid.NewV7()), CustomerID: *opts.CustomerID, Currency: opts.Currency, DueDate: opts.DueDate,
		Lines: lines, Subtotal: sub, TaxTotal: tax, Total: total,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	})
	require.NoError(t, err)
	return inv
}

// Issued inserts a draft and issues it directly in the store, past the
// gate: for tests about what follows issue, not about approvals.
func Issued(ctx context.Context, t testing.TB, db store.Executor, opts DraftOpts) *invoices.Invoice {
	t.Helper()
	return Issue(ctx, t, db, Draft(ctx, t, db, opts).ID)
}

// Issue issues the draft id directly in the store, past the gate,
// freezing the seller as it is set (none while none is).
func Issue(ctx context.Context, t testing.TB, db store.Executor, id uuid.UUID) *invoices.Invoice {
	t.Helper()
	out, err := store.WithTxResult(ctx, db, func(ctx context.Context, tx pgx.Tx) (*invoices.Invoice, error) {
		inv, err := invoices.InvoiceLockTx(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		return invoices.InvoiceIssueTx(ctx, tx, inv, invoices.DefaultNumberPrefix, time.Now(), invoices.Date{Time: time.Now().UTC().Truncate(24 * time.Hour)})
	})
	require.NoError(t, err)
	return out
}

// Seller sets the seller to d directly in the store, past the service's
// checks and its audit: for tests about what documents show, not about
// the seller's own rules. A seller already set gets its next version.
func Seller(ctx context.Context, t testing.TB, db store.Executor, d seller.Details) {
	t.Helper()
	if d.Address.Lines == nil {
		d.Address.Lines = []string{}
	}
	if d.BankAccounts == nil {
		d.BankAccounts = []party.BankAccount{}
	}
	_, err := db.Exec(ctx, `
		INSERT INTO seller (legal_name, trading_name, address, vat_id, tax_number, registration, contact, bank_accounts,
			payment_terms_days, version, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, now())
		ON CONFLICT (only_one) DO UPDATE SET legal_name = $1, trading_name = $2, address = $3, vat_id = $4, tax_number = $5,
			registration = $6, contact = $7, bank_accounts = $8, payment_terms_days = $9,
			version = seller.version + 1, updated_at = now()`,
		d.LegalName, d.TradingName, d.Address, d.VATID, d.TaxNumber, d.Registration, d.Contact, d.BankAccounts, d.PaymentTermsDays)
	require.NoError(t, err)
}
