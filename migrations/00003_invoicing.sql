-- +goose Up
-- Invoicing (issue 3): customers, invoices with lines, the gapless number
-- series and the Idempotency-Key store. Money is bigint minor units of the
-- row's ISO 4217 currency; there is no float or numeric column here.
CREATE TABLE customers (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    email      text NOT NULL DEFAULT '',
    currency   text NOT NULL,
    version    bigint NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT customers_name_len CHECK (char_length(name) BETWEEN 1 AND 200),
    CONSTRAINT customers_email_len CHECK (char_length(email) <= 254),
    CONSTRAINT customers_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT customers_version_positive CHECK (version >= 1)
);
-- Keyset pagination order.
CREATE INDEX customers_created_idx ON customers (created_at, id);

CREATE TABLE invoices (
    id          uuid PRIMARY KEY,
    customer_id uuid NOT NULL REFERENCES customers (id),
    status      text NOT NULL DEFAULT 'draft',
    number      text UNIQUE,
    currency    text NOT NULL,
    due_date    date,
    memo        text NOT NULL DEFAULT '',
    subtotal    bigint NOT NULL,
    tax_total   bigint NOT NULL,
    total       bigint NOT NULL,
    issued_at   timestamptz,
    voided_at   timestamptz,
    paid_at     timestamptz,
    version     bigint NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    -- Whom an issued invoice bills (the customer's name and email at
    -- issue), so renaming a customer later never changes an issued invoice.
    bill_to     jsonb,
    CONSTRAINT invoices_status CHECK (status IN ('draft', 'issued', 'paid', 'void')),
    CONSTRAINT invoices_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT invoices_memo_len CHECK (char_length(memo) <= 2000),
    CONSTRAINT invoices_amounts_non_negative CHECK (subtotal >= 0 AND tax_total >= 0),
    CONSTRAINT invoices_total_is_sum CHECK (total = subtotal + tax_total),
    -- A number and an issue time exactly when the invoice left draft.
    CONSTRAINT invoices_number_when_issued CHECK ((status = 'draft') = (number IS NULL)),
    CONSTRAINT invoices_issued_at_when_issued CHECK ((status = 'draft') = (issued_at IS NULL)),
    CONSTRAINT invoices_paid_at_when_paid CHECK ((status = 'paid') = (paid_at IS NOT NULL)),
    CONSTRAINT invoices_voided_at_when_void CHECK ((status = 'void') = (voided_at IS NOT NULL)),
    CONSTRAINT invoices_version_positive CHECK (version >= 1)
);
CREATE INDEX invoices_created_idx ON invoices (created_at, id);
CREATE INDEX invoices_customer_idx ON invoices (customer_id, created_at, id);
CREATE INDEX invoices_status_idx ON invoices (status, created_at, id);

CREATE TABLE invoice_lines (
    invoice_id   uuid NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
    position     integer NOT NULL,
    description  text NOT NULL,
    quantity     bigint NOT NULL,
    unit_amount  bigint NOT NULL,
    tax_rate_bps integer NOT NULL,
    amount       bigint NOT NULL,
    tax_amount   bigint NOT NULL,
    PRIMARY KEY (invoice_id, position),
    CONSTRAINT invoice_lines_position CHECK (position BETWEEN 0 AND 999),
    CONSTRAINT invoice_lines_description_len CHECK (char_length(description) BETWEEN 1 AND 1000),
    CONSTRAINT invoice_lines_quantity CHECK (quantity >= 1),
    CONSTRAINT invoice_lines_unit_amount CHECK (unit_amount >= 0),
    CONSTRAINT invoice_lines_tax_rate CHECK (tax_rate_bps BETWEEN 0 AND 10000),
    CONSTRAINT invoice_lines_amount CHECK (amount = quantity * unit_amount AND tax_amount >= 0)
);

-- One row per (prefix, year): issuing bumps last_seq in the issuing
-- transaction, so a rolled-back issue gives its number back and numbers
-- stay gapless. The row lock serialises issuers of a series; it is taken
-- by the last statement before COMMIT so it is held for the shortest time.
CREATE TABLE invoice_number_series (
    prefix   text NOT NULL,
    year     integer NOT NULL,
    last_seq bigint NOT NULL,
    PRIMARY KEY (prefix, year),
    CONSTRAINT invoice_number_series_seq CHECK (last_seq >= 1)
);

-- Issued, paid and void invoices are immutable except for their lifecycle:
-- issued → paid | void, with the matching timestamp, version and
-- updated_at. The application checks first; this is the backstop for any
-- other writer (a raw UPDATE, a future bug). SQLSTATE 55000
-- (object_not_in_prerequisite_state) lets the store map it to 409.
-- +goose StatementBegin
CREATE FUNCTION invoices_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status <> 'draft' THEN
            RAISE EXCEPTION 'invoice % is %: only drafts can be deleted', OLD.id, OLD.status
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status = 'draft' THEN
        RETURN NEW;
    END IF;
    -- Whole rows minus what an issued invoice may still change, so a
    -- column added later is frozen without touching this function.
    IF (to_jsonb(NEW) - ARRAY['status', 'paid_at', 'voided_at', 'version', 'updated_at'])
       IS DISTINCT FROM (to_jsonb(OLD) - ARRAY['status', 'paid_at', 'voided_at', 'version', 'updated_at']) THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'issued' AND NEW.status IN ('paid', 'void')) THEN
        RAISE EXCEPTION 'invoice % is %: it cannot become %', OLD.id, OLD.status, NEW.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF OLD.status <> 'issued' AND (NEW.paid_at IS DISTINCT FROM OLD.paid_at
                                   OR NEW.voided_at IS DISTINCT FROM OLD.voided_at) THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER invoices_freeze BEFORE UPDATE OR DELETE ON invoices
    FOR EACH ROW EXECUTE FUNCTION invoices_freeze();

-- Lines of a non-draft invoice cannot be inserted, changed or removed. FOR
-- SHARE waits for a concurrent issuer's row lock, so a line write racing an
-- issue sees the issued status rather than the stale draft.
-- +goose StatementBegin
CREATE FUNCTION invoice_lines_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    st text;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT status INTO st FROM invoices WHERE id = OLD.invoice_id FOR SHARE;
        IF st IS NOT NULL AND st <> 'draft' THEN
            RAISE EXCEPTION 'invoice % is %: its lines are frozen', OLD.invoice_id, st
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT status INTO st FROM invoices WHERE id = NEW.invoice_id FOR SHARE;
        IF st IS NOT NULL AND st <> 'draft' THEN
            RAISE EXCEPTION 'invoice % is %: its lines are frozen', NEW.invoice_id, st
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        RETURN NEW;
    END IF;
    RETURN OLD;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER invoice_lines_freeze BEFORE INSERT OR UPDATE OR DELETE ON invoice_lines
    FOR EACH ROW EXECUTE FUNCTION invoice_lines_freeze();

-- Idempotency-Key records (Stripe's semantics), scoped per principal. A row
-- with status NULL is in flight; its lease (locked_until) frees the key if
-- the replica that held it died. Rows older than 24 h are expired: the key
-- may be reused and the sweep deletes them.
CREATE TABLE idempotency_keys (
    principal_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key              text NOT NULL,
    request_hash     text NOT NULL,
    method           text NOT NULL,
    path             text NOT NULL,
    status           integer,
    response_headers jsonb,
    response_body    bytea,
    locked_until     timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz,
    PRIMARY KEY (principal_id, key),
    CONSTRAINT idempotency_keys_key_len CHECK (char_length(key) BETWEEN 1 AND 255),
    CONSTRAINT idempotency_keys_completed CHECK ((status IS NULL) = (completed_at IS NULL))
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE invoice_lines;
DROP TABLE invoices;
DROP TABLE invoice_number_series;
DROP TABLE customers;
DROP FUNCTION invoice_lines_freeze();
DROP FUNCTION invoices_freeze();
