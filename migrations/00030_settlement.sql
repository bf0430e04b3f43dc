-- +goose Up
-- Settlement (issue 18, docs/adr/0018-credit-notes-payments-and-what-is-owed.md):
-- payments (partial, reversible) and credit notes (own gapless series) move
-- an issued invoice's amount_paid and amount_credited; its issued content
-- stays frozen. Money is bigint minor units of the invoice's currency, at
-- most 2^53 - 1 (ADR-0011 §1).
ALTER TABLE invoices
    ADD COLUMN amount_paid bigint NOT NULL DEFAULT 0,
    ADD COLUMN amount_credited bigint NOT NULL DEFAULT 0;

CREATE TABLE payments (
    id              uuid PRIMARY KEY,
    invoice_id      uuid NOT NULL REFERENCES invoices (id),
    amount          bigint NOT NULL,
    -- The invoice's, copied by the insert so a list of payments reads alone.
    currency        text NOT NULL,
    received_on     date NOT NULL,
    method          text NOT NULL,
    reference       text NOT NULL DEFAULT '',
    -- NULL: an invoice marked paid before payments were recorded, carried
    -- over by this migration as one payment of its total.
    recorded_by     uuid REFERENCES users (id),
    recorded_at     timestamptz NOT NULL,
    reversed_at     timestamptz,
    reversed_by     uuid REFERENCES users (id),
    reversal_reason text,
    version         bigint NOT NULL DEFAULT 1,
    CONSTRAINT payments_amount CHECK (amount BETWEEN 1 AND 9007199254740991),
    CONSTRAINT payments_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT payments_method CHECK (method IN ('bank_transfer', 'card', 'cash', 'other')),
    CONSTRAINT payments_reference_len CHECK (char_length(reference) <= 200),
    CONSTRAINT payments_reversal_reason_len CHECK (char_length(reversal_reason) BETWEEN 1 AND 1000),
    -- Reversed exactly when it says when, by whom and why; a payment has
    -- two versions: received, then reversed.
    CONSTRAINT payments_reversed CHECK (
        (reversed_at IS NULL) = (reversal_reason IS NULL)
        AND (reversed_at IS NULL) = (reversed_by IS NULL)
        AND version = CASE WHEN reversed_at IS NULL THEN 1 ELSE 2 END)
);
CREATE INDEX payments_invoice_idx ON payments (invoice_id, recorded_at, id);

-- One row per (prefix, year), as invoice_number_series: the issuing
-- transaction bumps last_seq as its last statement, so a rollback gives
-- the number back.
CREATE TABLE credit_note_number_series (
    prefix   text NOT NULL,
    year     integer NOT NULL,
    last_seq bigint NOT NULL,
    PRIMARY KEY (prefix, year),
    CONSTRAINT credit_note_number_series_seq CHECK (last_seq >= 1)
);

CREATE TABLE credit_notes (
    id              uuid PRIMARY KEY,
    invoice_id      uuid NOT NULL REFERENCES invoices (id),
    number          text NOT NULL UNIQUE,
    currency        text NOT NULL,
    reason          text NOT NULL,
    subtotal        bigint NOT NULL,
    tax_total       bigint NOT NULL,
    total           bigint NOT NULL,
    line_count      integer NOT NULL,
    -- Whom the credited invoice billed (its frozen bill_to).
    bill_to         jsonb NOT NULL,
    -- The invoice version the approval was bound to.
    invoice_version bigint NOT NULL,
    issued_by       uuid NOT NULL REFERENCES users (id),
    approval_id     uuid NOT NULL,
    issued_at       timestamptz NOT NULL,
    CONSTRAINT credit_notes_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    CONSTRAINT credit_notes_reason_len CHECK (char_length(reason) BETWEEN 1 AND 1000),
    CONSTRAINT credit_notes_amounts CHECK (subtotal >= 0 AND tax_total >= 0 AND total = subtotal + tax_total
        AND total BETWEEN 1 AND 9007199254740991),
    CONSTRAINT credit_notes_line_count CHECK (line_count BETWEEN 1 AND 1000)
);
CREATE INDEX credit_notes_invoice_idx ON credit_notes (invoice_id, issued_at, id);

CREATE TABLE credit_note_lines (
    credit_note_id uuid NOT NULL REFERENCES credit_notes (id),
    position       integer NOT NULL,
    -- The invoice line credited by quantity; NULL for the lines of a
    -- credit by amount (one per tax rate of the invoice).
    invoice_line   integer,
    description    text NOT NULL,
    quantity       bigint NOT NULL,
    unit_amount    bigint NOT NULL,
    tax_rate_bps   integer NOT NULL,
    amount         bigint NOT NULL,
    tax_amount     bigint NOT NULL,
    PRIMARY KEY (credit_note_id, position),
    CONSTRAINT credit_note_lines_position CHECK (position BETWEEN 0 AND 999),
    CONSTRAINT credit_note_lines_invoice_line CHECK (invoice_line BETWEEN 0 AND 999),
    CONSTRAINT credit_note_lines_description_len CHECK (char_length(description) BETWEEN 1 AND 1000),
    CONSTRAINT credit_note_lines_quantity CHECK (quantity >= 1),
    CONSTRAINT credit_note_lines_unit_amount CHECK (unit_amount >= 0),
    CONSTRAINT credit_note_lines_tax_rate CHECK (tax_rate_bps BETWEEN 0 AND 10000),
    CONSTRAINT credit_note_lines_amount CHECK (amount = quantity * unit_amount AND tax_amount >= 0)
);

-- The issued content of an invoice stays frozen; its settlement
-- (amount_paid, amount_credited, and the status and paid_at that follow
-- from them) moves: issued → paid when the balance reaches zero, paid →
-- issued when a payment reversal reopens it, issued → void only while
-- nothing was paid or credited (the CHECKs below), and a credit is never
-- taken back. That the amounts are the sums of the payments and credit
-- notes is checked at commit (settlement_check below).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION invoices_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF (to_jsonb(NEW) - ARRAY['status', 'paid_at', 'voided_at', 'version', 'updated_at', 'amount_paid', 'amount_credited'])
       IS DISTINCT FROM (to_jsonb(OLD) - ARRAY['status', 'paid_at', 'voided_at', 'version', 'updated_at', 'amount_paid', 'amount_credited']) THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'issued' AND NEW.status IN ('paid', 'void'))
       AND NOT (OLD.status = 'paid' AND NEW.status = 'issued' AND NEW.amount_paid < OLD.amount_paid) THEN
        RAISE EXCEPTION 'invoice % is %: it cannot become %', OLD.id, OLD.status, NEW.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF NEW.amount_credited < OLD.amount_credited
       OR (OLD.status = 'void' AND (NEW.amount_paid, NEW.amount_credited) IS DISTINCT FROM (OLD.amount_paid, OLD.amount_credited)) THEN
        RAISE EXCEPTION 'invoice % is %: a credit is never taken back, and a void invoice is settled', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF (NEW.voided_at IS DISTINCT FROM OLD.voided_at AND NEW.status = OLD.status)
       OR (NEW.paid_at IS DISTINCT FROM OLD.paid_at AND NEW.status = OLD.status) THEN
        RAISE EXCEPTION 'invoice % is %: its content is frozen', OLD.id, OLD.status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- Payments are never deleted; one may only be reversed, once.
-- +goose StatementBegin
CREATE FUNCTION payments_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR OLD.reversed_at IS NOT NULL
       OR (to_jsonb(NEW) - ARRAY['reversed_at', 'reversed_by', 'reversal_reason', 'version'])
          IS DISTINCT FROM (to_jsonb(OLD) - ARRAY['reversed_at', 'reversed_by', 'reversal_reason', 'version']) THEN
        RAISE EXCEPTION 'payment % is recorded: it can only be reversed, once', OLD.id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER payments_freeze BEFORE UPDATE OR DELETE ON payments
    FOR EACH ROW EXECUTE FUNCTION payments_freeze();

-- Credit notes and their lines are never changed or deleted.
-- +goose StatementBegin
CREATE FUNCTION credit_notes_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'credit notes are frozen once issued'
        USING ERRCODE = 'object_not_in_prerequisite_state';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER credit_notes_freeze BEFORE UPDATE OR DELETE ON credit_notes
    FOR EACH ROW EXECUTE FUNCTION credit_notes_freeze();
CREATE TRIGGER credit_note_lines_freeze BEFORE UPDATE OR DELETE ON credit_note_lines
    FOR EACH ROW EXECUTE FUNCTION credit_notes_freeze();

-- At commit, whatever wrote: an invoice's amount_paid is the sum of its
-- payments that stand and its amount_credited the sum of its credit
-- notes, and a credit note's totals and line count are its lines' (so no
-- line joins one later). A writer other than the service that moves a
-- balance without the payment behind it, or the reverse, fails to commit.
-- +goose StatementBegin
CREATE FUNCTION settlement_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    inv_id uuid;
    cn_id  uuid;
    ok     boolean;
BEGIN
    CASE TG_TABLE_NAME
        WHEN 'invoices' THEN inv_id := NEW.id;
        WHEN 'credit_note_lines' THEN cn_id := NEW.credit_note_id;
        WHEN 'credit_notes' THEN inv_id := NEW.invoice_id; cn_id := NEW.id;
        ELSE inv_id := NEW.invoice_id;
    END CASE;
    IF inv_id IS NOT NULL THEN
        SELECT i.amount_paid = (SELECT coalesce(sum(p.amount), 0) FROM payments p WHERE p.invoice_id = i.id AND p.reversed_at IS NULL)
           AND i.amount_credited = (SELECT coalesce(sum(c.total), 0) FROM credit_notes c WHERE c.invoice_id = i.id)
          INTO ok FROM invoices i WHERE i.id = inv_id;
        IF ok IS DISTINCT FROM true THEN
            RAISE EXCEPTION 'invoice %: amount_paid and amount_credited must be the sums of its payments and credit notes', inv_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    END IF;
    IF cn_id IS NOT NULL THEN
        SELECT (c.line_count, c.subtotal, c.tax_total) =
               (SELECT count(*), coalesce(sum(l.amount), 0), coalesce(sum(l.tax_amount), 0) FROM credit_note_lines l WHERE l.credit_note_id = c.id)
          INTO ok FROM credit_notes c WHERE c.id = cn_id;
        IF ok IS DISTINCT FROM true THEN
            RAISE EXCEPTION 'credit note %: its totals and line count must be its lines''', cn_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE CONSTRAINT TRIGGER invoices_settlement_check AFTER INSERT OR UPDATE OF amount_paid, amount_credited ON invoices
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION settlement_check();
CREATE CONSTRAINT TRIGGER payments_settlement_check AFTER INSERT OR UPDATE ON payments
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION settlement_check();
CREATE CONSTRAINT TRIGGER credit_notes_settlement_check AFTER INSERT ON credit_notes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION settlement_check();
CREATE CONSTRAINT TRIGGER credit_note_lines_settlement_check AFTER INSERT ON credit_note_lines
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION settlement_check();

-- Invoices marked paid before payments existed were paid in full: one
-- payment of the total on the day they were marked, so that amount_paid
-- is the sum of payments for them too.
INSERT INTO payments (id, invoice_id, amount, currency, received_on, method, reference, recorded_at)
SELECT gen_random_uuid(), id, total, currency, (paid_at AT TIME ZONE 'UTC')::date, 'other', 'Paid in full', paid_at
FROM invoices WHERE status = 'paid' AND total > 0;
UPDATE invoices SET amount_paid = total WHERE status = 'paid';

ALTER TABLE invoices
    ADD CONSTRAINT invoices_settlement CHECK (amount_paid >= 0 AND amount_credited >= 0 AND amount_paid + amount_credited <= total),
    -- Paid exactly when nothing is owed; a draft has nothing to settle, a
    -- void invoice had nothing paid or credited.
    ADD CONSTRAINT invoices_paid_when_settled CHECK (
        CASE status
            WHEN 'paid' THEN amount_paid + amount_credited = total
            WHEN 'issued' THEN amount_paid + amount_credited < total OR total = 0
            ELSE amount_paid = 0 AND amount_credited = 0
        END);

-- What is owed: the receivables report reads open invoices by currency and
-- due date from this index alone (an index-only scan; 29 ms at 10^6
-- invoices, 10 % open, against 135 ms through invoices_status_idx). The
-- ?overdue=true list pages through invoices_status_idx.
CREATE INDEX invoices_open_idx ON invoices (currency, due_date)
    INCLUDE (customer_id, total, amount_paid, amount_credited) WHERE status = 'issued';

-- A credit note gives money back as an invoice takes it: the same tier as
-- issuing (10,000 major units of any currency → two approvers), added to
-- the policy in force, where it changes no past outcome (the capability
-- did not exist before).
INSERT INTO approval_policy_rules (id, capability, currency, min_amount_major, approvers, from_version)
SELECT gen_random_uuid(), 'issue-credit-note', NULL, 10000, 2, max(version) FROM approval_policy_versions;

-- +goose Down
-- Going down loses what only these tables hold: refused once a credit note
-- or a payment other than one carried over from a mark-paid exists.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM credit_notes) OR EXISTS (SELECT 1 FROM payments WHERE recorded_by IS NOT NULL) THEN
        RAISE EXCEPTION 'credit notes or recorded payments exist; going below migration 00030 would lose them';
    END IF;
END;
$$;
-- +goose StatementEnd
DELETE FROM approval_requests WHERE capability = 'issue-credit-note';
DELETE FROM approval_policy_rules WHERE capability = 'issue-credit-note';
DROP INDEX invoices_open_idx;
DROP TABLE credit_note_lines;
DROP TABLE credit_notes;
DROP TABLE credit_note_number_series;
DROP TABLE payments;
DROP TRIGGER invoices_settlement_check ON invoices;
DROP FUNCTION settlement_check();
DROP FUNCTION credit_notes_freeze();
DROP FUNCTION payments_freeze();
ALTER TABLE invoices DROP COLUMN amount_credited, DROP COLUMN amount_paid;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION invoices_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
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
