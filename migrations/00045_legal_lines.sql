-- +goose Up
-- Lines as an invoice must state them (issue 39, ADR-0021): a decimal
-- quantity in ten-thousandths (quantity_e4: 7.5 hours is 75000), its
-- unit (UN/ECE Recommendation 20, e.g. HUR), and a VAT category (UNCL
-- 5305: S standard, Z zero rated, E exempt, AE reverse charge, K
-- intra-community supply, G export, O outside the scope, L and M the
-- Canary Islands' and Ceuta's and Melilla's taxes) with the exemption
-- reason and VATEX code the exempt categories state. A line's amount is
-- quantity × unit amount rounded half-even to a minor unit; its
-- tax_amount is its share of its (category, rate) group's tax.
--
-- Lines already written were whole quantities of unspecified units,
-- taxed per line: they become quantity × 10^4 of C62 ("one", a unit),
-- category S where taxed and Z where not, and their invoices say
-- tax_rounding 'line', so nothing issued changes in value. The freeze
-- triggers refuse any change to an issued invoice's rows, which is what
-- this is not: they are off for these statements only.
ALTER TABLE invoice_lines DISABLE TRIGGER invoice_lines_freeze;
ALTER TABLE invoices DISABLE TRIGGER invoices_freeze;
ALTER TABLE credit_note_lines DISABLE TRIGGER credit_note_lines_freeze;

ALTER TABLE invoice_lines DROP CONSTRAINT invoice_lines_quantity;
ALTER TABLE invoice_lines DROP CONSTRAINT invoice_lines_amount;
ALTER TABLE invoice_lines RENAME COLUMN quantity TO quantity_e4;
UPDATE invoice_lines SET quantity_e4 = quantity_e4 * 10000;
ALTER TABLE invoice_lines
    ADD COLUMN unit text NOT NULL DEFAULT 'C62',
    ADD COLUMN vat_category text NOT NULL DEFAULT 'S',
    ADD COLUMN exemption_reason text NOT NULL DEFAULT '',
    ADD COLUMN exemption_code text NOT NULL DEFAULT '';
UPDATE invoice_lines SET vat_category = 'Z' WHERE tax_rate_bps = 0;
ALTER TABLE invoice_lines
    ALTER COLUMN unit DROP DEFAULT,
    ALTER COLUMN vat_category DROP DEFAULT,
    ADD CONSTRAINT invoice_lines_quantity CHECK (quantity_e4 > 0),
    ADD CONSTRAINT invoice_lines_amount CHECK (amount >= 0 AND tax_amount >= 0),
    ADD CONSTRAINT invoice_lines_unit CHECK (unit ~ '^[A-Z0-9]{2,3}$'),
    ADD CONSTRAINT invoice_lines_vat_category CHECK (vat_category IN ('S', 'Z', 'E', 'AE', 'K', 'G', 'O', 'L', 'M')),
    -- Standard rate is a rate; the exempt and zero categories are 0 % (O
    -- has no rate at all, stored as 0).
    ADD CONSTRAINT invoice_lines_rate_of_category CHECK (
        CASE vat_category WHEN 'S' THEN tax_rate_bps > 0
                          WHEN 'L' THEN true WHEN 'M' THEN true
                          ELSE tax_rate_bps = 0 END),
    ADD CONSTRAINT invoice_lines_exemption_len CHECK (char_length(exemption_reason) <= 1000 AND char_length(exemption_code) <= 30);

ALTER TABLE invoices
    ADD COLUMN tax_rounding text NOT NULL DEFAULT 'group',
    ADD CONSTRAINT invoices_tax_rounding CHECK (tax_rounding IN ('line', 'group'));
UPDATE invoices SET tax_rounding = 'line';

ALTER TABLE credit_note_lines DROP CONSTRAINT credit_note_lines_quantity;
ALTER TABLE credit_note_lines DROP CONSTRAINT credit_note_lines_amount;
ALTER TABLE credit_note_lines RENAME COLUMN quantity TO quantity_e4;
UPDATE credit_note_lines SET quantity_e4 = quantity_e4 * 10000;
ALTER TABLE credit_note_lines
    ADD COLUMN unit text NOT NULL DEFAULT 'C62',
    ADD COLUMN vat_category text NOT NULL DEFAULT 'S',
    ADD COLUMN exemption_reason text NOT NULL DEFAULT '',
    ADD COLUMN exemption_code text NOT NULL DEFAULT '';
UPDATE credit_note_lines SET vat_category = 'Z' WHERE tax_rate_bps = 0;
ALTER TABLE credit_note_lines
    ALTER COLUMN unit DROP DEFAULT,
    ALTER COLUMN vat_category DROP DEFAULT,
    ADD CONSTRAINT credit_note_lines_quantity CHECK (quantity_e4 > 0),
    ADD CONSTRAINT credit_note_lines_amount CHECK (amount >= 0 AND tax_amount >= 0),
    ADD CONSTRAINT credit_note_lines_unit CHECK (unit ~ '^[A-Z0-9]{2,3}$'),
    ADD CONSTRAINT credit_note_lines_vat_category CHECK (vat_category IN ('S', 'Z', 'E', 'AE', 'K', 'G', 'O', 'L', 'M')),
    ADD CONSTRAINT credit_note_lines_exemption_len CHECK (char_length(exemption_reason) <= 1000 AND char_length(exemption_code) <= 30);

ALTER TABLE credit_note_lines ENABLE TRIGGER credit_note_lines_freeze;
ALTER TABLE invoices ENABLE TRIGGER invoices_freeze;
ALTER TABLE invoice_lines ENABLE TRIGGER invoice_lines_freeze;

-- +goose Down
-- Back to whole quantities of unnamed units, taxed per line: refused once
-- a line says what going down would lose.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM invoice_lines WHERE quantity_e4 % 10000 <> 0 OR unit <> 'C62'
                   OR vat_category NOT IN ('S', 'Z') OR exemption_reason <> '' OR exemption_code <> '')
       OR EXISTS (SELECT 1 FROM credit_note_lines WHERE quantity_e4 % 10000 <> 0 OR unit <> 'C62'
                   OR vat_category NOT IN ('S', 'Z') OR exemption_reason <> '' OR exemption_code <> '')
       OR EXISTS (SELECT 1 FROM invoices WHERE tax_rounding = 'group' AND status <> 'draft') THEN
        RAISE EXCEPTION 'lines have decimal quantities, units or VAT categories, or invoices were issued with VAT per group; going below migration 00045 would lose them';
    END IF;
END;
$$;
-- +goose StatementEnd
ALTER TABLE invoice_lines DISABLE TRIGGER invoice_lines_freeze;
ALTER TABLE invoices DISABLE TRIGGER invoices_freeze;
ALTER TABLE credit_note_lines DISABLE TRIGGER credit_note_lines_freeze;
ALTER TABLE credit_note_lines
    DROP CONSTRAINT credit_note_lines_quantity, DROP CONSTRAINT credit_note_lines_amount,
    DROP CONSTRAINT credit_note_lines_unit, DROP CONSTRAINT credit_note_lines_vat_category,
    DROP CONSTRAINT credit_note_lines_exemption_len,
    DROP COLUMN unit, DROP COLUMN vat_category, DROP COLUMN exemption_reason, DROP COLUMN exemption_code;
UPDATE credit_note_lines SET quantity_e4 = quantity_e4 / 10000;
ALTER TABLE credit_note_lines RENAME COLUMN quantity_e4 TO quantity;
ALTER TABLE credit_note_lines
    ADD CONSTRAINT credit_note_lines_quantity CHECK (quantity >= 1),
    ADD CONSTRAINT credit_note_lines_amount CHECK (amount = quantity * unit_amount AND tax_amount >= 0);
ALTER TABLE invoices DROP CONSTRAINT invoices_tax_rounding, DROP COLUMN tax_rounding;
ALTER TABLE invoice_lines
    DROP CONSTRAINT invoice_lines_quantity, DROP CONSTRAINT invoice_lines_amount,
    DROP CONSTRAINT invoice_lines_unit, DROP CONSTRAINT invoice_lines_vat_category,
    DROP CONSTRAINT invoice_lines_rate_of_category, DROP CONSTRAINT invoice_lines_exemption_len,
    DROP COLUMN unit, DROP COLUMN vat_category, DROP COLUMN exemption_reason, DROP COLUMN exemption_code;
UPDATE invoice_lines SET quantity_e4 = quantity_e4 / 10000;
ALTER TABLE invoice_lines RENAME COLUMN quantity_e4 TO quantity;
ALTER TABLE invoice_lines
    ADD CONSTRAINT invoice_lines_quantity CHECK (quantity >= 1),
    ADD CONSTRAINT invoice_lines_amount CHECK (amount = quantity * unit_amount AND tax_amount >= 0);
ALTER TABLE credit_note_lines ENABLE TRIGGER credit_note_lines_freeze;
ALTER TABLE invoices ENABLE TRIGGER invoices_freeze;
ALTER TABLE invoice_lines ENABLE TRIGGER invoice_lines_freeze;
