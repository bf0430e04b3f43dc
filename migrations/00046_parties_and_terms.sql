-- +goose Up
-- What an invoice must say of whom it bills and on what terms (issue 39,
-- Article 226 of Directive 2006/112/EC): the customer's postal address
-- (street lines, postcode, city, subdivision, ISO 3166-1 country), VAT
-- identifier, national tax number, buyer reference (a German Leitweg-ID,
-- say), the language its documents are written in, and default payment
-- terms; the invoice's date of supply or service period, payment terms,
-- purchase order and buyer reference. Customers created before have an
-- empty address and English documents: drafts for them can still be
-- edited, and issuing says what is missing. An issued invoice freezes
-- its bill_to whole (the invoices freeze trigger compares whole rows).
ALTER TABLE customers
    ADD COLUMN address jsonb NOT NULL DEFAULT '{"lines": [], "postcode": "", "city": "", "subdivision": "", "country": ""}',
    ADD COLUMN vat_id text NOT NULL DEFAULT '',
    ADD COLUMN tax_number text NOT NULL DEFAULT '',
    ADD COLUMN buyer_reference text NOT NULL DEFAULT '',
    ADD COLUMN language text NOT NULL DEFAULT 'en',
    ADD COLUMN payment_terms_days integer,
    ADD CONSTRAINT customers_address CHECK (jsonb_typeof(address) = 'object' AND jsonb_typeof(address -> 'lines') = 'array'),
    -- The compact form party.ParseVATID returns; the service checks each
    -- country's own form and check digits.
    ADD CONSTRAINT customers_vat_id CHECK (vat_id ~ '^([A-Z]{2}[0-9A-Z+*]{2,16})?$'),
    ADD CONSTRAINT customers_tax_number_len CHECK (char_length(tax_number) <= 50),
    ADD CONSTRAINT customers_buyer_reference_len CHECK (char_length(buyer_reference) <= 200),
    ADD CONSTRAINT customers_language CHECK (language IN ('en', 'de', 'fr')),
    ADD CONSTRAINT customers_payment_terms CHECK (payment_terms_days BETWEEN 0 AND 365);

ALTER TABLE invoices
    ADD COLUMN supply_date date,
    ADD COLUMN period_start date,
    ADD COLUMN period_end date,
    ADD COLUMN payment_terms_days integer,
    ADD COLUMN purchase_order text NOT NULL DEFAULT '',
    ADD COLUMN buyer_reference text NOT NULL DEFAULT '',
    -- A date of supply or a period, not both; a period has both ends, in order.
    ADD CONSTRAINT invoices_supply CHECK (supply_date IS NULL OR period_start IS NULL),
    ADD CONSTRAINT invoices_period CHECK ((period_start IS NULL) = (period_end IS NULL) AND period_end >= period_start),
    ADD CONSTRAINT invoices_payment_terms CHECK (payment_terms_days BETWEEN 0 AND 365),
    ADD CONSTRAINT invoices_purchase_order_len CHECK (char_length(purchase_order) <= 200),
    ADD CONSTRAINT invoices_buyer_reference_len CHECK (char_length(buyer_reference) <= 200);

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM invoices WHERE status <> 'draft' AND (supply_date IS NOT NULL OR period_start IS NOT NULL
                   OR payment_terms_days IS NOT NULL OR purchase_order <> '' OR buyer_reference <> '')) THEN
        RAISE EXCEPTION 'issued invoices state a supply date, period, terms or references; going below migration 00046 would lose them';
    END IF;
END;
$$;
-- +goose StatementEnd
ALTER TABLE invoices
    DROP CONSTRAINT invoices_supply, DROP CONSTRAINT invoices_period, DROP CONSTRAINT invoices_payment_terms,
    DROP CONSTRAINT invoices_purchase_order_len, DROP CONSTRAINT invoices_buyer_reference_len,
    DROP COLUMN supply_date, DROP COLUMN period_start, DROP COLUMN period_end, DROP COLUMN payment_terms_days,
    DROP COLUMN purchase_order, DROP COLUMN buyer_reference;
ALTER TABLE customers
    DROP CONSTRAINT customers_address, DROP CONSTRAINT customers_vat_id, DROP CONSTRAINT customers_tax_number_len,
    DROP CONSTRAINT customers_buyer_reference_len, DROP CONSTRAINT customers_language, DROP CONSTRAINT customers_payment_terms,
    DROP COLUMN address, DROP COLUMN vat_id, DROP COLUMN tax_number, DROP COLUMN buyer_reference, DROP COLUMN language,
    DROP COLUMN payment_terms_days;
