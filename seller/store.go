package seller

// The seller's SQL (migration 00044): one row, replaced whole.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

const sellerColumns = `s.legal_name, s.trading_name, s.address, s.vat_id, s.tax_number, s.registration, s.contact,
	s.bank_accounts, s.payment_terms_days, s.version, s.updated_at, s.updated_by, u.username`

// sellerGet returns the seller, nil when none is set.
func sellerGet(ctx context.Context, db store.Executor) (*Seller, error) {
	return scanSeller(db.QueryRow(ctx, `SELECT `+sellerColumns+` FROM seller s LEFT JOIN users u ON u.id = s.updated_by`))
}

func scanSeller(row pgx.Row) (*Seller, error) {
	var (
		s                          Seller
		address, contact, accounts []byte
		by                         *uuid.UUID
		name                       *string
	)
	err := row.Scan(&s.LegalName, &s.TradingName, &address, &s.VATID, &s.TaxNumber, &s.Registration, &contact,
		&accounts, &s.PaymentTermsDays, &s.Version, &s.UpdatedAt, &by, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, store.MapError(err, "seller")
	}
	for _, f := range []struct {
		raw []byte
		dst any
	}{{address, &s.Address}, {contact, &s.Contact}, {accounts, &s.BankAccounts}} {
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return nil, store.MapError(err, "seller")
		}
	}
	s.UpdatedAt = s.UpdatedAt.UTC()
	if by != nil {
		s.UpdatedBy = &UserRef{ID: *by, Username: *name}
	}
	return &s, nil
}

// sellerLockKey serialises changes of the seller (pg_advisory_xact_lock),
// the first one too, when there is no row to lock. Readers never take it.
const sellerLockKey int64 = 0x73656c6c65720000 // "seller\0\0"

// sellerLockTx takes the seller lock and returns the seller read after
// it is held, nil when none is set.
func sellerLockTx(ctx context.Context, tx pgx.Tx) (*Seller, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, sellerLockKey); err != nil {
		return nil, store.MapError(err, "seller")
	}
	return sellerGet(ctx, tx)
}

// sellerPutTx writes s as the seller, in place of the one there is.
func sellerPutTx(ctx context.Context, tx pgx.Tx, s *Seller) error {
	var by *uuid.UUID
	if s.UpdatedBy != nil {
		by = &s.UpdatedBy.ID
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO seller (legal_name, trading_name, address, vat_id, tax_number, registration, contact, bank_accounts,
		                    payment_terms_days, version, updated_at, updated_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (only_one) DO UPDATE SET legal_name = $1, trading_name = $2, address = $3, vat_id = $4, tax_number = $5,
			registration = $6, contact = $7, bank_accounts = $8, payment_terms_days = $9, version = $10, updated_at = $11, updated_by = $12`,
		s.LegalName, s.TradingName, jsonArg(s.Address), s.VATID, s.TaxNumber, s.Registration, jsonArg(s.Contact), jsonArg(s.BankAccounts),
		s.PaymentTermsDays, s.Version, s.UpdatedAt, by)
	return store.MapError(err, "seller")
}

// jsonArg is v as a jsonb argument; the details were checked, so they
// marshal.
func jsonArg(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
