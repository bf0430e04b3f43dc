-- +goose Up
-- The seller as data (docs/documents.md, "Who sells"): who issues the
-- invoices, in one row that admins change through PUT /v1/seller or
-- `invoiced seller set`. version counts the changes (GET /v1/seller's
-- ETag); each is in the audit chain with the seller before and after. No
-- row: no seller yet, as on a new database until `serve` seeds it from
-- INVOICED_SELLER_* or an admin sets it. The party checks (party.Address,
-- party.ParseVATID, party.ParseIBAN) run in the service; the constraints
-- hold the shape.
CREATE TABLE seller (
    only_one           boolean PRIMARY KEY DEFAULT true,
    legal_name         text NOT NULL,
    trading_name       text NOT NULL,
    address            jsonb NOT NULL,
    vat_id             text NOT NULL,
    tax_number         text NOT NULL,
    registration       text NOT NULL,
    contact            jsonb NOT NULL,
    bank_accounts      jsonb NOT NULL,
    -- NULL: no default payment terms.
    payment_terms_days int,
    version            bigint NOT NULL,
    updated_at         timestamptz NOT NULL,
    -- NULL: seeded from the environment, by no user.
    updated_by         uuid REFERENCES users (id),
    CONSTRAINT seller_one_row CHECK (only_one),
    CONSTRAINT seller_legal_name CHECK (legal_name <> ''),
    CONSTRAINT seller_address CHECK (jsonb_typeof(address) = 'object'),
    CONSTRAINT seller_contact CHECK (jsonb_typeof(contact) = 'object'),
    CONSTRAINT seller_bank_accounts CHECK (jsonb_typeof(bank_accounts) = 'array'),
    CONSTRAINT seller_payment_terms CHECK (payment_terms_days BETWEEN 0 AND 365),
    CONSTRAINT seller_version CHECK (version >= 1)
);

-- +goose Down
-- Going down loses the seller an admin set (the audit chain keeps its
-- history, not a row to read): refused once there is one.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM seller) THEN
        RAISE EXCEPTION 'the seller is set (invoiced seller show); going below migration 00044 would lose it';
    END IF;
END;
$$;
-- +goose StatementEnd
DROP TABLE seller;
