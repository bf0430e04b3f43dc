-- +goose Up
-- An issued invoice or credit note freezes the seller whole (the seller
-- table's row as at issue: legal and trading name, address, VAT id, tax
-- number, registration, contact, bank accounts, payment terms), read by
-- its issuing statement. Those frozen before keep the shape of 00040
-- ({name, address, tax_id}), which the service reads as the same.
ALTER TABLE invoices DROP CONSTRAINT invoices_seller;
ALTER TABLE invoices ADD CONSTRAINT invoices_seller CHECK (
    seller IS NULL OR (status <> 'draft' AND jsonb_typeof(seller) = 'object'
        AND coalesce(seller ->> 'legal_name', seller ->> 'name', '') <> ''));
ALTER TABLE credit_notes DROP CONSTRAINT credit_notes_seller;
ALTER TABLE credit_notes ADD CONSTRAINT credit_notes_seller CHECK (
    seller IS NULL OR (jsonb_typeof(seller) = 'object'
        AND coalesce(seller ->> 'legal_name', seller ->> 'name', '') <> ''));

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM invoices WHERE seller ? 'legal_name') OR EXISTS (SELECT 1 FROM credit_notes WHERE seller ? 'legal_name') THEN
        RAISE EXCEPTION 'documents froze the seller whole; going below migration 00047 would refuse them';
    END IF;
END;
$$;
-- +goose StatementEnd
ALTER TABLE credit_notes DROP CONSTRAINT credit_notes_seller;
ALTER TABLE credit_notes ADD CONSTRAINT credit_notes_seller CHECK (
    seller IS NULL OR (jsonb_typeof(seller) = 'object'
        AND jsonb_typeof(seller -> 'name') = 'string' AND seller ->> 'name' <> ''
        AND jsonb_typeof(seller -> 'address') = 'string'
        AND jsonb_typeof(seller -> 'tax_id') = 'string'));
ALTER TABLE invoices DROP CONSTRAINT invoices_seller;
ALTER TABLE invoices ADD CONSTRAINT invoices_seller CHECK (
    seller IS NULL OR (status <> 'draft'
        AND jsonb_typeof(seller) = 'object'
        AND jsonb_typeof(seller -> 'name') = 'string' AND seller ->> 'name' <> ''
        AND jsonb_typeof(seller -> 'address') = 'string'
        AND jsonb_typeof(seller -> 'tax_id') = 'string'));
