-- +goose Up
-- Each time an issued invoice or credit note is mailed to its customer
-- (docs/sending.md): to whom, which documents, the mail as rendered and
-- its Message-ID, who asked and when; sent_at once the SMTP server took
-- it, failed_at and error once the retries gave up. The documents are
-- kept as sent (sending_documents): what the customer received, byte for
-- byte, whatever happens to the invoice after (a payment changes its PDF's
-- balance). Rows are only added, and a sending's outcome written once.
CREATE TABLE sendings (
    id             uuid PRIMARY KEY,
    invoice_id     uuid REFERENCES invoices (id),
    credit_note_id uuid REFERENCES credit_notes (id),
    recipient      text NOT NULL,
    subject        text NOT NULL,
    body_text      text NOT NULL,
    body_html      text NOT NULL,
    -- The seller's contact address, where the customer's answers go.
    reply_to       text NOT NULL,
    message_id     text NOT NULL UNIQUE,
    requested_by   uuid NOT NULL REFERENCES users (id),
    requested_at   timestamptz NOT NULL,
    sent_at        timestamptz,
    failed_at      timestamptz,
    error          text NOT NULL DEFAULT '',
    CONSTRAINT sendings_one_document CHECK ((invoice_id IS NULL) <> (credit_note_id IS NULL)),
    CONSTRAINT sendings_one_outcome CHECK (sent_at IS NULL OR failed_at IS NULL),
    CONSTRAINT sendings_recipient CHECK (recipient <> '' AND char_length(recipient) <= 254)
);
CREATE INDEX sendings_invoice ON sendings (invoice_id, requested_at, id) WHERE invoice_id IS NOT NULL;
CREATE INDEX sendings_credit_note ON sendings (credit_note_id, requested_at, id) WHERE credit_note_id IS NOT NULL;

CREATE TABLE sending_documents (
    sending_id   uuid NOT NULL REFERENCES sendings (id),
    position     int NOT NULL,
    -- pdf, facturx, or an e-invoice format (ubl, cii, xrechnung-ubl, …).
    format       text NOT NULL,
    filename     text NOT NULL,
    content_type text NOT NULL,
    content      bytea NOT NULL,
    sha256       text NOT NULL,
    PRIMARY KEY (sending_id, position)
);

-- +goose Down
-- Going down loses the record of what was mailed to customers: refused
-- once anything was.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM sendings) THEN
        RAISE EXCEPTION 'invoices or credit notes were mailed (sendings); going below migration 00050 would lose that record';
    END IF;
END;
$$;
-- +goose StatementEnd
DROP TABLE sending_documents;
DROP TABLE sendings;
