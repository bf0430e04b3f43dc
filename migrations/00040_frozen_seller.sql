-- +goose Up
-- Who issued an invoice or credit note, as the seller settings
-- (INVOICED_SELLER_*) said in its issuing transaction, so that changing
-- them later never changes a document already issued
-- (docs/adr/0018-credit-notes-payments-and-what-is-owed.md, "The seller
-- as at issue"). NULL: issued before this migration, or while no seller
-- was configured; such a document shows the seller as configured now.
-- The invoices freeze trigger (00030) compares whole rows, so the column
-- is frozen once issued without touching it; credit notes never change.
ALTER TABLE invoices
    ADD COLUMN seller jsonb,
    -- A draft has no seller of its own: it shows the settings as they are.
    ADD CONSTRAINT invoices_seller CHECK (
        seller IS NULL OR (status <> 'draft'
            AND jsonb_typeof(seller) = 'object'
            AND jsonb_typeof(seller -> 'name') = 'string' AND seller ->> 'name' <> ''
            AND jsonb_typeof(seller -> 'address') = 'string'
            AND jsonb_typeof(seller -> 'tax_id') = 'string'));
ALTER TABLE credit_notes
    ADD COLUMN seller jsonb,
    ADD CONSTRAINT credit_notes_seller CHECK (
        seller IS NULL OR (jsonb_typeof(seller) = 'object'
            AND jsonb_typeof(seller -> 'name') = 'string' AND seller ->> 'name' <> ''
            AND jsonb_typeof(seller -> 'address') = 'string'
            AND jsonb_typeof(seller -> 'tax_id') = 'string'));

-- +goose Down
-- Going down loses who issued the documents issued since: their PDFs
-- would show whatever the settings say then. Refused once one records it.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM invoices WHERE seller IS NOT NULL) OR EXISTS (SELECT 1 FROM credit_notes WHERE seller IS NOT NULL) THEN
        RAISE EXCEPTION 'invoices or credit notes record the seller they were issued by; going below migration 00040 would lose it';
    END IF;
END;
$$;
-- +goose StatementEnd
ALTER TABLE credit_notes DROP COLUMN seller;
ALTER TABLE invoices DROP COLUMN seller;
