-- +goose Up
-- E-invoices (issue 41): the format a customer takes its invoices in
-- ('none', or one of the e-invoice formats: ubl, cii, xrechnung-ubl,
-- xrechnung-cii, peppol, facturx), which issuing checks the draft against
-- so that an issued invoice always yields it, and the customer's Peppol
-- participant id (an EAS scheme, a colon, the identifier:
-- 0088:4035811991021), its electronic address (EN 16931 BT-49). An
-- issued invoice freezes both in its bill_to.
ALTER TABLE customers
    ADD COLUMN einvoice_format text NOT NULL DEFAULT 'none',
    ADD COLUMN peppol_id text NOT NULL DEFAULT '',
    ADD CONSTRAINT customers_einvoice_format CHECK (
        einvoice_format IN ('none', 'ubl', 'cii', 'xrechnung-ubl', 'xrechnung-cii', 'peppol', 'facturx')),
    -- The service checks the scheme against the EAS code list.
    ADD CONSTRAINT customers_peppol_id CHECK (peppol_id ~ '^([0-9A-Z]{2,4}:[^[:space:]]{1,254})?$');

-- +goose Down
ALTER TABLE customers
    DROP CONSTRAINT customers_einvoice_format, DROP CONSTRAINT customers_peppol_id,
    DROP COLUMN einvoice_format, DROP COLUMN peppol_id;
